#!/usr/bin/env bash
# KV GET and PUT against the READ and SEND pingpong of the same provider (soft over TCP, two processes each, events
# mode), alternating ROUNDS times so that the machine's load drifts over all three alike (docs/verification.md).
# pingpong's p50 is a whole round trip in every mode: a PUT compares with the SEND figure as printed.
#   scripts/kv-ratio.sh [ROUNDS]
set -euo pipefail
cd "$(dirname "$0")/.."
for _ in $(seq "${1:-3}"); do
  for mode in send read; do
    p="pingpong --provider soft --mode $mode --poll events --size 512 --warmup 20000 --iters 5000"
    ./mooring $p --listen 18621 > /dev/null & sleep 3
    echo "$mode (load $(cut -d' ' -f1 /proc/loadavg)): $(./mooring $p --connect 127.0.0.1:18621 | grep -o 'p50 [0-9.]*')"
    wait
  done
  echo "kv (load $(cut -d' ' -f1 /proc/loadavg)): $(./mooring kv --ops 20000 | grep -o '[A-Z]* p50 [0-9.]* µs' | tr '\n' ' ')"
done

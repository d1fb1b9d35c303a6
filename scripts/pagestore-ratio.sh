#!/usr/bin/env bash
# The page store under a crowd against the raw pingpong of the same provider and the same number in flight (issue 26's
# figures): soft over TCP, two processes each, events mode, 8 KiB pages. For each TASKS/SESSIONS of 1/1, 64/4 and 64/1
# it runs `pingpong --mode read` and `--mode send` at --concurrency TASKS, then `pagestore` (10% writes), alternating
# ROUNDS times so the machine's load drifts over all three alike. Prints per row the reads/s, the read p50 against the
# READ pingpong's p50 and the reads/s against its ops/s, and the write p50 against the SEND pingpong's p50 (pingpong's
# p50 is a whole round trip in every mode). A stale or wrong page fails pagestore, printed. Under the bench lock:
#   flock /tmp/mooring-bench.lock scripts/pagestore-ratio.sh [ROUNDS [OPS]]    (defaults: 2, 20000)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2} ops=${2:-20000}
pingpong() { # $1: mode, $2: concurrency; prints "p50 ops/s"
  local p="pingpong --provider soft --mode $1 --poll events --size 8192 --concurrency $2 --warmup 1000 --iters $ops"
  ./mooring $p --listen 18671 > /dev/null & sleep 3
  local out; out=$(./mooring $p --connect 127.0.0.1:18671)
  wait
  echo "$(grep -o 'p50 [0-9.]*' <<< "$out" | cut -d' ' -f2) $(grep -o '[0-9]* ops/s' <<< "$out" | cut -d' ' -f1)"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "| round | tasks / sessions | reads/s | read p50 µs | READ pingpong p50 µs, ops/s | read ratio | reads/s ÷ ops/s | write p50 µs | SEND pingpong p50 µs | write ratio |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for round in $(seq "$rounds"); do
  for row in "1 1" "64 4" "64 1"; do
    read -r n s <<< "$row"
    read -r read_p50 read_ops < <(pingpong read "$n")
    read -r send_p50 _ < <(pingpong send "$n")
    ./mooring pagestore --provider soft --listen 18672 --sessions "$s" > /dev/null 2>&1 & sleep 3
    if ! out=$(./mooring pagestore --provider soft --connect 127.0.0.1:18672 --sessions "$s" --concurrency "$n" \
        --warmup $((ops / 5)) --ops "$ops" 2>&1); then
      echo "round $round, $n/$s: pagestore failed:"; echo "$out"; exit 1
    fi
    wait
    reads=$(grep -o '[0-9]* reads/s' <<< "$out" | cut -d' ' -f1)
    rp50=$(grep -o 'read p50 [0-9.]*' <<< "$out" | cut -d' ' -f3)
    wp50=$(grep -o 'write p50 [0-9.]*' <<< "$out" | cut -d' ' -f3)
    echo "| $round | $n / $s | $reads | $rp50 | $read_p50, $read_ops | $(ratio "$rp50" "$read_p50") |" \
      "$(ratio "$reads" "$read_ops") | $wp50 | $send_p50 | $(ratio "$wp50" "$send_p50") |"
  done
done

#!/usr/bin/env bash
# Revocation under read load (issue 26's figure), soft provider over TCP, two processes each, events mode:
# `mooring kv --concurrency N` — N tasks GET by RDMA READ through leases the server offered while PUTs replace the
# values, each PUT answered once the server revoked every lease of the old value (REVOKE, the readers' READs in
# flight, their RELEASE, the key's invalidation) — alternating ROUNDS times with `pingpong --mode send` at
# --concurrency N and at 1, so that the machine's load drifts over all three alike. Prints per round the revocations,
# their p50, sessions lost and the ratio of that p50 to each SEND round trip's p50 (pingpong's p50 is a whole round
# trip); a stale or torn GET, or a lost session, ends kv with an error, printed. Run it under the shared bench lock:
#   flock /tmp/mooring-bench.lock scripts/revocation-ratio.sh [ROUNDS [N [OPS]]]    (defaults: 3, 64, 40000)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-3} n=${2:-64} ops=${3:-40000}
send_p50() { # $1: concurrency
  local p="pingpong --provider soft --mode send --poll events --size 64 --concurrency $1 --warmup 20000 --iters 20000"
  ./mooring $p --listen 18641 > /dev/null & sleep 3
  ./mooring $p --connect 127.0.0.1:18641 | grep -o 'p50 [0-9.]*' | cut -d' ' -f2
  wait
}
ratios=()
for round in $(seq "$rounds"); do
  send_n=$(send_p50 "$n")
  send_1=$(send_p50 1)
  if ! kv=$(./mooring kv --provider soft --concurrency "$n" --keys "$n" --warmup 10000 --ops "$ops" 2>&1); then
    echo "round $round: kv failed:"; echo "$kv"; exit 1
  fi
  line=$(grep -o 'leases revoked by PUTs p50 [0-9.]* µs, p99 [0-9.]* µs ([0-9]*); [0-9]* session(s) lost' <<< "$kv")
  read -r p50 p99 count lost < <(sed -E 's/.*p50 ([0-9.]+) µs, p99 ([0-9.]+) µs \(([0-9]+)\); ([0-9]+) .*/\1 \2 \3 \4/' <<< "$line")
  client=$(grep -o '[0-9]* leases revoked by PUTs while held, 0 stale or torn GETs, session kept' <<< "$kv")
  ratio=$(awk -v r="$p50" -v s="$send_n" 'BEGIN { printf "%.2f", r / s }')
  ratio1=$(awk -v r="$p50" -v s="$send_1" 'BEGIN { printf "%.2f", r / s }')
  ratios+=("$ratio")
  echo "round $round (load $(cut -d' ' -f1 /proc/loadavg)): $count revocations, p50 $p50 µs, p99 $p99 µs;" \
    "$lost sessions lost; client: $client;" \
    "SEND p50 $send_n µs at $n in flight (ratio $ratio), $send_1 µs at 1 (ratio $ratio1)"
done
echo "median ratio to SEND at $n in flight: $(printf '%s\n' "${ratios[@]}" | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')"

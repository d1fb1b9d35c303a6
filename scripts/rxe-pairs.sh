#!/usr/bin/env bash
# rxe-pairs.sh - perftest against `mooring pingpong` on rxe0, in alternating pairs, inside the rxe VM:
#
#   flock /work/notes/vm.lock scripts/rxe-vm.sh --mttcg -- scripts/rxe-pairs.sh [PAIRS] [PROTOCOL...]
#
# For each protocol (write, send, read; default all three) it runs PAIRS (default 3) pairs of perftest's
# ib_<protocol>_lat and then pingpong in the same protocol, 64-byte messages, two processes each, so that the
# load's drift over the run hits both sides of a pair alike. One line per pair: perftest's typical and p99,
# pingpong's p50 and p99 (µs, in perftest's unit: half a round trip for send and write), their ratio at p50; then
# the median ratio per protocol. Build on the host first (`./mooring pingpong --help` rebuilds the CLI): the VM has no
# network.
set -uo pipefail
cd "$(dirname -- "${BASH_SOURCE[0]}")/.."

pairs=${1:-3}
shift || true
protocols=("$@")
[ ${#protocols[@]} -gt 0 ] || protocols=(write send read)

# Every process is bounded by `timeout`: a client that started before its server was listening (a loaded host) must
# cost one missing figure, not a server waiting for it until the VM's own timeout ends the whole run.
# perftest's row for 64 bytes: bytes iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%
perftest() {
  timeout 120 "ib_$1_lat" -d rxe0 -x 1 -s 64 -n 5000 >/dev/null 2>&1 &
  sleep 3
  timeout 110 "ib_$1_lat" -d rxe0 -x 1 -s 64 -n 5000 127.0.0.1 2>&1 | awk '$1 == 64 { print $5, $8 }'
  wait
}

# pingpong prints the whole round trip in every mode; perftest's typical is half of one for ib_send_lat and
# ib_write_lat, the whole one for ib_read_lat (one READ). So that a ratio compares like with like, pingpong's p50 and
# p99 are halved here for send and write, as perftest does.
pingpong() {
  local p="pingpong --provider ibv --mode $1 --size 64 --warmup 20000 --iters 5000" halve=2
  [ "$1" = read ] && halve=1
  timeout 600 ./mooring $p --listen 18515 >/dev/null 2>&1 &
  sleep 8
  timeout 590 ./mooring $p --connect 127.0.0.1:18515 2>&1 \
    | sed -n 's/^latency.* p50 \([0-9.]*\) .* p99 \([0-9.]*\) .*/\1 \2/p' \
    | awk -v h="$halve" '{ printf "%.2f %.2f\n", $1 / h, $2 / h }'
  wait
}

echo "uptime before: $(uptime)"
for t in "${protocols[@]}"; do
  ratios=()
  failed=0
  for ((i = 1; i <= pairs; i++)); do
    read -r typical p99 <<<"$(perftest "$t")"
    read -r p50 mp99 <<<"$(pingpong "$t")"
    # A failed run prints no row, or `inf`/`nan` for its typical (mawk reads "inf" as a number): such a pair is dropped
    # and reported, never scored as a ratio of 0.
    ratio=$(awk -v a="${p50:-}" -v b="${typical:-}" 'BEGIN { n = "^[0-9]+([.][0-9]+)?$";
      if (a ~ n && b ~ n && a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "failed" }')
    echo "$t pair $i: ib_${t}_lat typical ${typical:-?} p99 ${p99:-?} | pingpong p50 ${p50:-?} p99 ${mp99:-?} | ratio $ratio"
    if [ "$ratio" = failed ]; then failed=$((failed + 1)); else ratios+=("$ratio"); fi
  done
  median=$(printf '%s\n' "${ratios[@]}" | sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "n/a";
    else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.2f", (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  echo "$t: median ratio $median over ${#ratios[@]} pairs ($failed failed pairs dropped)"
done
echo "uptime after: $(uptime)"

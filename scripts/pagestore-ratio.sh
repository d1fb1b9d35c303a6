#!/usr/bin/env bash
# The page store under a crowd against the raw pingpong of the same provider and the same number in flight (issue 26's
# figures): soft over TCP, two processes each, events mode, 8 KiB pages. For each TASKS/SESSIONS of 1/1, 64/4 and 64/1
# it runs `pingpong --mode read` and `--mode send` at --concurrency TASKS, then `pagestore` twice: reads only, and with
# 10% writes; alternating ROUNDS times so the machine's load drifts over all four alike.
# The read figures come from the reads-only run, so that both sides of the comparison do the same work on the same
# two processes: 8 KiB READs, TASKS in flight, the server's CPU not involved. With 10% writes the server also takes
# each write's 8 KiB message, checksums it and replies, and the client sends them, on the same 2 cores: a load the READ
# pingpong does not carry (a third of the reads/s at 64 tasks, 2026-11-28). That run's reads/s is printed beside it, and
# its write p50 goes against the SEND pingpong's (pingpong's p50 is a whole round trip in every mode). Every page read
# is verified in both runs (checksum, body, not stale); a stale or wrong page fails pagestore, printed.
# Every run first does WARMUP untimed round trips or operations (default 5 × OPS), so that the JIT has compiled what it
# runs before the clock starts: with 1,000 (pingpong) and 4,000 (pagestore) the C2 compiler threads took 2.8 s of CPU in
# the server and 3.6 s in the client of one 20,000-operation pagestore run on these 2 cores, and the page store, which
# runs far more code than the pingpong, lost most (2026-11-28). Under the lock:
#   flock /tmp/mooring-bench.lock scripts/pagestore-ratio.sh [ROUNDS [OPS [WARMUP]]]    (defaults: 2, 20000, 5 × OPS)
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${1:-2} ops=${2:-20000}
warmup=${3:-$((5 * ops))}
log=$(mktemp)
trap 'rm -f "$log"' EXIT
listening() { # waits (up to 60 s) until the server started last prints its "listening on" line
  for _ in $(seq 600); do grep -q '^listening on' "$log" && return; sleep 0.1; done
  echo "no server came up:" >&2; cat "$log" >&2; return 1
}
pingpong() { # $1: mode, $2: concurrency; prints "p50 ops/s"
  local p="pingpong --provider soft --mode $1 --poll events --size 8192 --concurrency $2 --warmup $warmup --iters $ops"
  : > "$log"; ./mooring $p --listen 18671 > "$log" & listening
  local out; out=$(./mooring $p --connect 127.0.0.1:18671)
  wait
  echo "$(grep -o 'p50 [0-9.]*' <<< "$out" | cut -d' ' -f2) $(grep -o '[0-9]* ops/s' <<< "$out" | cut -d' ' -f1)"
}
pagestore() { # $1: tasks, $2: sessions, $3: write percent; prints "reads/s read-p50 write-p50" (write p50: none)
  : > "$log"; ./mooring pagestore --provider soft --listen 18672 --sessions "$2" > "$log" 2>&1 & local server=$!
  listening
  local out
  if ! out=$(./mooring pagestore --provider soft --connect 127.0.0.1:18672 --sessions "$2" --concurrency "$1" \
      --warmup "$warmup" --ops "$ops" --write-percent "$3" 2>&1); then
    echo "pagestore failed ($1 tasks, $2 sessions, $3% writes):" >&2; echo "$out" >&2; kill "$server"; return 1
  fi
  wait
  echo "$(grep -o '[0-9]* reads/s' <<< "$out" | cut -d' ' -f1) $(grep -o 'read p50 [0-9.]*' <<< "$out" | cut -d' ' -f3)" \
    "$(grep -o 'write p50 [0-9.]*' <<< "$out" | cut -d' ' -f3 || echo none)"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
echo "| round | tasks / sessions | reads/s | read p50 µs | READ pingpong p50 µs, ops/s | read ratio | reads/s ÷ ops/s" \
  "| with 10% writes: reads/s | write p50 µs | SEND pingpong p50 µs | write ratio |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
for round in $(seq "$rounds"); do
  for row in "1 1" "64 4" "64 1"; do
    read -r n s <<< "$row"
    read -r read_p50 read_ops < <(pingpong read "$n")
    read -r send_p50 _ < <(pingpong send "$n")
    only=$(pagestore "$n" "$s" 0) || exit 1
    mixed=$(pagestore "$n" "$s" 10) || exit 1
    read -r reads rp50 _ <<< "$only"
    read -r mixed_reads _ wp50 <<< "$mixed"
    echo "| $round | $n / $s | $reads | $rp50 | $read_p50, $read_ops | $(ratio "$rp50" "$read_p50") |" \
      "$(ratio "$reads" "$read_ops") | $mixed_reads | $wp50 | $send_p50 | $(ratio "$wp50" "$send_p50") |"
  done
done

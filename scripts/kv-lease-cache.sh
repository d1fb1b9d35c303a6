#!/usr/bin/env bash
# The KV workload with more keys than the server's per-host lease limit, today's client (LeaseCache) against the
# client of BASE (an unbounded HashMap of leases, dropped whole on BUSY), alternating in one JVM on one in-process
# server (docs/verification.md). Runs under the shared bench lock.
#   scripts/kv-lease-cache.sh [BASE [KEYS [OPS [ROUNDS [LEASES]]]]]   (LEASES: the server's per-host limit)
set -euo pipefail
cd "$(dirname "$0")/.."
base=${1:-21d488a}
shift || true
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
./mooring mvn -o -q -pl examples -am test-compile dependency:build-classpath -Dmdep.outputFile="$out/cp" \
  -Dmdep.includeScope=test > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
cp="examples/target/test-classes:examples/target/classes:$(cat "$out/cp")"
mkdir -p "$out/src" "$out/classes"
git show "$base:examples/src/main/java/io/mooring/examples/kv/KvClient.java" \
  | sed 's/\bKvClient\b/KvClientBefore/g' > "$out/src/KvClientBefore.java"
java=/usr/lib/jvm/temurin-25-jdk-amd64/bin
"$java/javac" -nowarn -cp "$cp" -d "$out/classes" "$out/src/KvClientBefore.java"
flock /tmp/mooring-bench.lock "$java/java" --enable-native-access=ALL-UNNAMED -cp "$out/classes:$cp" \
  io.mooring.examples.kv.KvWorkload "$@"

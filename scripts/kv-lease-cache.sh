#!/usr/bin/env bash
# The KV workload with more keys than the server's per-host lease limit: the client before the lease cache (an
# unbounded HashMap of leases, dropped whole on BUSY; HashMapKvClient) against today's (KvClient on LeaseCache),
# alternating in one JVM on one in-process server (docs/benchmarks.md). Runs under the shared bench lock.
#   scripts/kv-lease-cache.sh [KEYS [OPS [ROUNDS [LEASES]]]]   (LEASES: the server's per-host limit)
set -euo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
./mooring mvn -o -q -pl examples -am test-compile dependency:build-classpath -Dmdep.outputFile="$out/cp" \
  -Dmdep.includeScope=test > "$out/build.log" 2>&1 || { cat "$out/build.log"; exit 1; }
cp="examples/target/test-classes:examples/target/classes:$(cat "$out/cp")"
flock /tmp/mooring-bench.lock /usr/lib/jvm/temurin-25-jdk-amd64/bin/java --enable-native-access=ALL-UNNAMED \
  -cp "$cp" io.mooring.examples.kv.KvWorkload "$@"

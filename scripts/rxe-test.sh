#!/usr/bin/env bash
# rxe-test.sh - run the ibv provider's tests against real verbs: Soft-RoCE (rxe0 on lo) in a qemu VM.
#
#   scripts/rxe-test.sh [-Dtest=PATTERN] [other Maven arguments]
#
# Compiles on the host (the VM has no network), then runs the Ibv* test classes of lifecycle and verbs inside
# scripts/rxe-vm.sh with offline Maven: IbvConformanceTest (the provider conformance suite on rxe0), IbvRxeTest
# (soak, memory windows, error flush, teardown orders), and the layout/encoding tests. Exits with Maven's
# status: non-zero if any test failed, or 124 if the whole run exceeded MOORING_RXE_TIMEOUT seconds (default
# 2400), or 125 if the VM could not be booted. Reports land in verbs/target/surefire-reports as usual.
set -euo pipefail
cd "$(dirname "$0")/.."

timeout_s=${MOORING_RXE_TIMEOUT:-2400}
vm=scripts/rxe-vm.sh
if [[ ! -x $vm ]]; then
  echo "rxe-test: $vm is missing: it boots the Soft-RoCE VM (see docs/design.md)" >&2
  exit 125
fi

tests=(-Dtest='Ibv*Test' -Dsurefire.failIfNoSpecifiedTests=false)
for arg in "$@"; do
  [[ $arg == -Dtest=* ]] && tests=(-Dsurefire.failIfNoSpecifiedTests=false)
done

echo "rxe-test: compiling on the host"
./mooring mvn -o -q -pl lifecycle,verbs test-compile

# The VM emulates its CPUs (TCG): Maven's own JVM spends most of its time compiling itself; C1 alone is faster.
export MAVEN_OPTS="${MAVEN_OPTS:-} -XX:TieredStopAtLevel=1"

echo "rxe-test: running the ibv tests in the rxe VM (bounded to ${timeout_s}s)"
# Inside: offline, and no recompilation worth the name (the classes are up to date); the device must be there.
exec "$vm" --timeout "$timeout_s" -- bash -c '
  set -euo pipefail
  if ! ibv_devices | grep -q rxe; then echo "rxe-test: no rxe device in the VM" >&2; exit 125; fi
  exec ./mooring mvn -o -pl lifecycle,verbs test "$@"
' rxe-test "${tests[@]}" "$@"

#!/usr/bin/env bash
# rxe-test.sh - run the ibv provider's tests against real verbs: Soft-RoCE (rxe0 on lo) in a qemu VM.
#
#   scripts/rxe-test.sh [-Dname=value ...] [CLASS | CLASS#METHOD ...]
#
# Compiles on the host (the VM has no network) and computes the test classpath there, then runs JUnit's console
# launcher with plain `java` inside scripts/rxe-vm.sh: no Maven in the VM, whose emulated CPUs would spend most of
# their time compiling Maven itself. Without CLASS arguments it runs every Ibv*Test class of verbs:
# IbvConformanceTest (the provider conformance suite on rxe0), IbvRxeTest (soak, memory windows, error flush,
# teardown orders) and the layout/encoding tests. CLASS is a simple name in io.mooring.verbs or
# io.mooring.verbs.ibv, or a fully qualified one; -D options become system properties of the test JVM, e.g.
# -Dmooring.soak.iterations=20000.
#
# Exit status: 0 when every test passed, 1 if any failed, 2 if none ran; 124 if the whole run exceeded
# MOORING_RXE_TIMEOUT seconds (default 2400); 125 if the VM could not be booted or lacks rxe0. JUnit XML
# reports land in verbs/target/rxe-reports.
set -euo pipefail
cd "$(dirname "$0")/.."

timeout_s=${MOORING_RXE_TIMEOUT:-2400}
vm=scripts/rxe-vm.sh
reports=$PWD/verbs/target/rxe-reports
classpath_file=verbs/target/rxe-classpath.txt

for arg in "$@"; do
  case $arg in
    -D*=*) ;;
    -* | '') echo "rxe-test: unknown option '$arg' (usage: $0 [-Dname=value ...] [CLASS | CLASS#METHOD ...])" >&2
      exit 2 ;;
  esac
done

echo "rxe-test: compiling on the host"
./mooring mvn -q -pl lifecycle,verbs test-compile \
  org.apache.maven.plugins:maven-dependency-plugin:3.9.0:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/rxe-classpath.txt
classpath=$PWD/verbs/target/test-classes:$PWD/verbs/target/classes:$(<"$classpath_file")
java=$(./mooring mvn -v | sed -n 's/^Java version: .*, runtime: //p')/bin/java
rm -rf "$reports"

# A simple class name is looked up in the verbs test packages.
qualify() {
  local pkg
  [[ $1 == *.* ]] && { printf '%s' "$1"; return; }
  for pkg in io/mooring/verbs io/mooring/verbs/ibv; do
    [[ -f verbs/target/test-classes/$pkg/$1.class ]] && { printf '%s' "${pkg//\//.}.$1"; return; }
  done
  echo "rxe-test: no test class $1 in verbs" >&2
  exit 2
}
props=() selectors=()
for arg in "$@"; do
  case $arg in
    -D*) props+=("$arg") ;;
    *#*) class=$(qualify "${arg%%#*}"); selectors+=(--select-method="$class#${arg#*#}") ;;
    *) class=$(qualify "$arg"); selectors+=(--select-class="$class") ;;
  esac
done
if ((${#selectors[@]} == 0)); then
  selectors=(--scan-classpath="$PWD/verbs/target/test-classes" --include-classname='.*\.Ibv[^.]*Test')
fi

# The tests run in verbs/ as under Maven (the layout test finds its C program there).
# What the module's surefire configuration gives the tests (native access, two soft devices), plus C1 only:
# under TCG the C2 compiler costs more emulated CPU than its code saves in these short runs. A test that
# exceeds its @Timeout prints every thread's stack before it is interrupted.
jvm=(-Dbasedir="$PWD/verbs" --enable-native-access=ALL-UNNAMED -Dmooring.soft.devices=2
  -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djunit.jupiter.execution.timeout.threaddump.enabled=true
  "${props[@]}")

echo "rxe-test: running the ibv tests in the rxe VM (bounded to ${timeout_s}s)"
cd verbs
exec "../$vm" --timeout "$timeout_s" -- bash -c '
  if ! ibv_devices | grep -q rxe; then echo "rxe-test: no rxe device in the VM" >&2; exit 125; fi
  exec "$@"
' rxe-test "$java" "${jvm[@]}" -cp "$classpath" org.junit.platform.console.ConsoleLauncher execute \
  --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests --reports-dir="$reports" \
  "${selectors[@]}"

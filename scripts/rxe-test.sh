#!/usr/bin/env bash
# rxe-test.sh - run the ibv provider's tests against real verbs: Soft-RoCE (rxe0 on lo) in a qemu VM.
#
#   scripts/rxe-test.sh [-Dname=value ...] [CLASS | CLASS#METHOD ...]
#
# Compiles on the host (the VM has no network) and computes the test classpath there, then runs JUnit's console
# launcher with plain `java` inside scripts/rxe-vm.sh: no Maven in the VM, whose emulated CPUs would spend most of
# their time compiling Maven itself. Without CLASS arguments it runs every Ibv*Test class of verbs and
# remote-lease: IbvConformanceTest (the provider conformance suite on rxe0), IbvRxeTest (soak, memory windows,
# error flush, teardown orders), the layout/encoding tests, and IbvLeaseTest (leases isolated on rxe). CLASS is a
# simple name in one of those modules' test packages (e.g. TwoProcessTest of chaos, with -Dmooring.chaos.owner and
# -Dmooring.chaos.peer naming ibv:rxe0; netty's with -Dmooring.netty.test.device=ibv:rxe0), or a fully qualified
# one; -D options become system properties of the test JVM, e.g. -Dmooring.soak.iterations=20000.
#
# Exit status: 0 when every test passed, 1 if any failed, 2 if none ran; 124 if the whole run exceeded
# MOORING_RXE_TIMEOUT seconds (default 2400); 125 if the VM could not be booted or lacks rxe0. JUnit XML
# reports land in verbs/target/rxe-reports.
set -euo pipefail
cd "$(dirname "$0")/.."

timeout_s=${MOORING_RXE_TIMEOUT:-2400}
vm=scripts/rxe-vm.sh
reports=$PWD/verbs/target/rxe-reports
modules=(verbs remote-lease chaos netty) # whose test classes can run; the build adds what they depend on

for arg in "$@"; do
  case $arg in
    -D*=*) ;;
    -* | '') echo "rxe-test: unknown option '$arg' (usage: $0 [-Dname=value ...] [CLASS | CLASS#METHOD ...])" >&2
      exit 2 ;;
  esac
done

echo "rxe-test: compiling on the host"
./mooring mvn -q -pl test-support,lifecycle,verbs,allocator,remote-lease,chaos,netty test-compile \
  org.apache.maven.plugins:maven-dependency-plugin:3.9.0:build-classpath \
  -Dmdep.includeScope=test -Dmdep.outputFile=target/rxe-classpath.txt
# Each module's test and main classes, then the union of their dependencies (the verbs module's brings the
# console launcher), each entry once.
classpath=$(for m in "${modules[@]}"; do
  printf '%s\n' "$PWD/$m/target/test-classes" "$PWD/$m/target/classes"
done; for m in "${modules[@]}"; do tr ':' '\n' <"$m/target/rxe-classpath.txt"; echo; done)
classpath=$(awk 'NF && !seen[$0]++' <<<"$classpath" | paste -sd:)
java=$(./mooring mvn -v | sed -n 's/^Java version: .*, runtime: //p')/bin/java
rm -rf "$reports"

# A simple class name is looked up in those modules' test classes.
qualify() {
  local found
  [[ $1 == *.* ]] && { printf '%s' "$1"; return; }
  for m in "${modules[@]}"; do
    found=$(cd "$m/target/test-classes" && find . -name "$1.class" -print -quit)
    [[ -z $found ]] || break
  done
  [[ -n $found ]] || { echo "rxe-test: no test class $1 in ${modules[*]}" >&2; exit 2; }
  found=${found#./}
  found=${found%.class}
  printf '%s' "${found//\//.}"
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
  selectors=(--include-classname='.*\.Ibv[^.]*Test')
  for m in "${modules[@]}"; do selectors+=(--scan-classpath="$PWD/$m/target/test-classes"); done
fi

# The tests run in verbs/ as under Maven (the layout test finds its C program there).
# What the module's surefire configuration gives the tests (native access, two soft devices), plus C1 only:
# under TCG the C2 compiler costs more emulated CPU than its code saves in these short runs. A test that
# exceeds its @Timeout, or 10 minutes without one, prints every thread's stack before it is interrupted: the console
# launcher prints nothing until the end, so a hung test would otherwise only run into the VM's bound, unnamed.
jvm=(-Dbasedir="$PWD/verbs" --enable-native-access=ALL-UNNAMED -Dmooring.soft.devices=2
  -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Djunit.jupiter.execution.timeout.threaddump.enabled=true
  -Djunit.jupiter.execution.timeout.default=600s "${props[@]}")

echo "rxe-test: running the ibv tests in the rxe VM (bounded to ${timeout_s}s)"
rm -f "$reports"/TEST-*.xml
rc=0
(cd verbs && "../$vm" --timeout "$timeout_s" -- bash -c '
  if ! ibv_devices | grep -q rxe; then echo "rxe-test: no rxe device in the VM" >&2; exit 125; fi
  exec "$@"
' rxe-test "$java" "${jvm[@]}" -cp "$classpath" org.junit.platform.console.ConsoleLauncher execute \
  --disable-banner --disable-ansi-colors --details=tree --fail-if-no-tests --reports-dir="$reports" \
  "${selectors[@]}") || rc=$?

# One plain closing line, from the JUnit XML report (the console launcher's own summary is a box).
report=$reports/TEST-junit-jupiter.xml
if [[ -f $report ]]; then
  count() { grep -o -m1 " $1=\"[0-9]*\"" "$report" | grep -o '[0-9]*'; }
  tests=$(count tests) skipped=$(count skipped) failed=$(( $(count failures) + $(count errors) ))
  echo "rxe: $((tests - skipped - failed)) passed, $failed failed, $skipped skipped"
fi
exit "$rc"

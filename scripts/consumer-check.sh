#!/usr/bin/env bash
# Uses Mooring the way an application does: a separate Maven project imports io.mooring:mooring-bom, depends on
# io.mooring:mooring-remote-lease and io.mooring:mooring-netty (with Netty's transport, at the version Mooring builds
# with), compiles the user guide's examples (examples/.../guide) and runs them — the lease example twice: on the module
# path with native access granted to Mooring's native modules by name, and from an executable jar on the class path
# with Enable-Native-Access in its manifest. A warning or error on stderr fails the check.
# Needs the artifacts installed first (./mooring mvn -DskipTests install). Prints one closing line.
set -euo pipefail
cd "$(dirname "$0")/.."
here=$PWD
version=$(sed -n 's:^  <version>\(.*\)</version>:\1:p' pom.xml | head -1)
netty_version=$(sed -n 's:.*<netty.version>\(.*\)</netty.version>.*:\1:p' pom.xml)
work=$(mktemp -d "${TMPDIR:-/tmp}/mooring-consumer.XXXXXX")
trap 'rm -rf "$work"' EXIT
java=$(./mooring mvn -v | sed -n 's/^Java version: .*, runtime: //p')/bin/java

mkdir -p "$work/src/main/java"
cp -r examples/src/main/java/io "$work/src/main/java/"
# Only the guide's examples and the plain ones: what a reader copies (the gRPC one needs grpc-java, not Mooring's).
rm -rf "$work/src/main/java/io/mooring/examples/kv" "$work/src/main/java/io/mooring/examples/netty"
cat >"$work/src/main/java/module-info.java" <<'EOF'
module consumer {
    requires io.mooring.lease;
    requires io.mooring.netty;
    requires io.netty.transport;
}
EOF
cat >"$work/pom.xml" <<EOF
<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>example</groupId>
  <artifactId>consumer</artifactId>
  <version>1</version>
  <properties>
    <maven.compiler.release>25</maven.compiler.release>
    <project.build.sourceEncoding>UTF-8</project.build.sourceEncoding>
  </properties>
  <dependencyManagement>
    <dependencies>
      <dependency>
        <groupId>io.mooring</groupId>
        <artifactId>mooring-bom</artifactId>
        <version>$version</version>
        <type>pom</type>
        <scope>import</scope>
      </dependency>
    </dependencies>
  </dependencyManagement>
  <dependencies>
    <dependency>
      <groupId>io.mooring</groupId>
      <artifactId>mooring-remote-lease</artifactId>
    </dependency>
    <dependency>
      <groupId>io.mooring</groupId>
      <artifactId>mooring-netty</artifactId>
    </dependency>
    <dependency>
      <groupId>io.netty</groupId>
      <artifactId>netty-transport</artifactId>
      <version>$netty_version</version>
    </dependency>
  </dependencies>
  <build>
    <finalName>consumer</finalName>
    <plugins>
      <plugin>
        <artifactId>maven-compiler-plugin</artifactId>
        <version>3.14.0</version>
      </plugin>
      <plugin>
        <artifactId>maven-resources-plugin</artifactId>
        <version>3.3.1</version>
      </plugin>
      <plugin>
        <artifactId>maven-jar-plugin</artifactId>
        <version>3.4.2</version>
        <configuration>
          <archive>
            <manifest>
              <mainClass>io.mooring.examples.guide.LeaseExample</mainClass>
              <addClasspath>true</addClasspath>
              <classpathPrefix>lib/</classpathPrefix>
            </manifest>
            <manifestEntries>
              <Enable-Native-Access>ALL-UNNAMED</Enable-Native-Access>
            </manifestEntries>
          </archive>
        </configuration>
      </plugin>
      <plugin>
        <artifactId>maven-dependency-plugin</artifactId>
        <version>3.9.0</version>
        <executions>
          <execution>
            <phase>package</phase>
            <goals><goal>copy-dependencies</goal></goals>
            <configuration><outputDirectory>\${project.build.directory}/lib</outputDirectory></configuration>
          </execution>
        </executions>
      </plugin>
      <plugin>
        <artifactId>maven-surefire-plugin</artifactId>
        <version>3.6.1</version>
      </plugin>
      <plugin>
        <artifactId>maven-install-plugin</artifactId>
        <version>3.1.2</version>
      </plugin>
    </plugins>
  </build>
</project>
EOF
echo "consumer-check: building a project that imports io.mooring:mooring-bom:$version"
(cd "$work" && "$here/mooring" mvn -q -f "$work/pom.xml" package) || { echo "consumer-check: the build failed"; exit 1; }

lib=$(ls "$work"/target/lib/*.jar | paste -sd:)
# Sets cmd to the java command that starts example $2 the way mode $1 does.
command_for() {
  case $1 in
    module-path) cmd=("$java" --enable-native-access=io.mooring.verbs,io.mooring.allocator,io.mooring.netty
                      -p "$work/target/consumer.jar:$lib" -m "consumer/io.mooring.examples.guide.$2") ;;
    # The executable jar's manifest names LeaseExample and grants native access (honoured for -jar only).
    class-path) cmd=("$java" -jar "$work/target/consumer.jar") ;;
  esac
}

passed=0 failed=0
# Whether the stderr file $1 is clean: no warning, error or exception (the JDK's native-access warnings among them).
clean() { ! grep -q -E 'WARNING|SEVERE|ERROR|Exception' "$1"; }
# Runs the lease example's owner and requester in mode $1, each within 120 s; a failure or a warning fails.
check_lease() {
  local mode=$1 out="$work/$1" port='' owner
  mkdir -p "$out"
  command_for "$mode" LeaseExample
  timeout 120 "${cmd[@]}" owner 0 >"$out/owner.out" 2>"$out/owner.err" &
  owner=$!
  for _ in $(seq 600); do
    port=$(sed -n '1s/^listening on \([0-9]*\)$/\1/p' "$out/owner.out")
    [ -n "$port" ] && break
    sleep 0.2
  done
  if [ -n "$port" ] && timeout 120 "${cmd[@]}" requester "127.0.0.1:$port" >"$out/requester.out" 2>"$out/requester.err" &&
     wait "$owner" && clean "$out/owner.err" && clean "$out/requester.err" &&
     tail -1 "$out/owner.out" | grep -q '^owner: done' && tail -1 "$out/requester.out" | grep -q '^requester: done'; then
    passed=$((passed + 1))
  else
    kill "$owner" 2>/dev/null || true
    failed=$((failed + 1))
    echo "consumer-check: $mode: LeaseExample failed:"
    tail -n +1 "$out"/owner.* "$out"/requester.* 2>/dev/null
  fi
}

command_for module-path AllocatorExample
if timeout 120 "${cmd[@]}" >"$work/alloc.out" 2>"$work/alloc.err" && clean "$work/alloc.err"; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "consumer-check: module-path: AllocatorExample failed:"; cat "$work"/alloc.*
fi
# The Netty example: an echo through buffers of mooring-netty's allocator, on the module path.
command_for module-path NettyEchoExample
if timeout 120 "${cmd[@]}" >"$work/netty.out" 2>"$work/netty.err" && clean "$work/netty.err" &&
   [ "$(cat "$work/netty.out")" = "$(printf 'registered: true\nechoed: hello from registered memory')" ]; then
  passed=$((passed + 1))
else
  failed=$((failed + 1)); echo "consumer-check: module-path: NettyEchoExample failed:"; cat "$work"/netty.*
fi
check_lease module-path
check_lease class-path
echo "consumer-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]

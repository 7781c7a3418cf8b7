#!/usr/bin/env bash
# Compiles the Java SASL suite (src/) with javac against Debian's ZooKeeper
# 3.8 client jars and runs it against host:port in mode open or enforced,
# with -Djava.security.auth.login.config=$ZKSASL_CLIENT_JAAS (the JAAS file
# with the client sections, see src/zksasl/Main.java) and
# -Dzookeeper.sasl.client=true. The suite prints one PASS/FAIL line per
# check and "N passed, M failed"; the exit status is the suite's. Client logs
# go to stderr at the level in $ZKCOMPAT_LOG_LEVEL (default error).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 host:port open|enforced" >&2
  exit 2
fi
: "${ZKSASL_CLIENT_JAAS:?ZKSASL_CLIENT_JAAS must name the client JAAS file}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jars=/usr/share/java
cp="$jars/zookeeper.jar:$jars/zookeeper-jute.jar:$jars/slf4j-api.jar"
for f in "$jars/zookeeper.jar" "$jars/zookeeper-jute.jar" "$jars/slf4j-api.jar" "$jars/slf4j-simple.jar"; do
  if [ ! -f "$f" ]; then
    echo "missing $f: run scripts/install-deps.sh (Debian packages zookeeper, openjdk-17-jdk-headless)" >&2
    exit 2
  fi
done
for tool in javac java; do
  command -v "$tool" >/dev/null || { echo "$tool not found: run scripts/install-deps.sh" >&2; exit 2; }
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
mapfile -t sources < <(find "$here/src" -name '*.java' | sort)
javac -Xlint:all,-path -Werror -d "$out" -cp "$cp" "${sources[@]}"
status=0
java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${ZKCOMPAT_LOG_LEVEL:-error}" \
  -Djava.security.auth.login.config="$ZKSASL_CLIENT_JAAS" \
  -Dzookeeper.sasl.client=true \
  -cp "$out:$cp:$jars/slf4j-simple.jar" zksasl.Main "$1" "$2" || status=$?
exit "$status"

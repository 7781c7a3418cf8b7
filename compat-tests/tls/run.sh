#!/usr/bin/env bash
# Compiles the Java TLS suite (src/) with javac against Debian's ZooKeeper
# 3.8 client and Netty jars and runs it against host:port, the server's
# secure client port, with the client's TLS settings as system properties:
# zookeeper.client.secure, zookeeper.clientCnxnSocket (Netty) and the
# zookeeper.ssl.keyStore/trustStore keys (PEM files from $ZKTLS_DIR).
# The suite prints one PASS/FAIL line per check and "N passed, M failed";
# the exit status is the suite's. Client logs go to stderr at the level in
# $ZKCOMPAT_LOG_LEVEL (default error).
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 host:port" >&2
  exit 2
fi
: "${ZKTLS_DIR:?ZKTLS_DIR must name the directory of the PEM files}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
jars=/usr/share/java
cp=""
for j in zookeeper zookeeper-jute slf4j-api netty-buffer netty-codec netty-common netty-handler \
  netty-resolver netty-transport netty-transport-native-epoll netty-transport-native-unix-common; do
  f="$jars/$j.jar"
  if [ ! -f "$f" ]; then
    echo "missing $f: run scripts/install-deps.sh (Debian packages zookeeper, libnetty-java, openjdk-17-jdk-headless)" >&2
    exit 2
  fi
  cp="${cp:+$cp:}$f"
done
for tool in javac java; do
  command -v "$tool" >/dev/null || { echo "$tool not found: run scripts/install-deps.sh" >&2; exit 2; }
done
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
mapfile -t sources < <(find "$here/src" -name '*.java' | sort)
javac -Xlint:all,-path,-try -Werror -d "$out" -cp "$cp" "${sources[@]}"
status=0
java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
  -Dorg.slf4j.simpleLogger.defaultLogLevel="${ZKCOMPAT_LOG_LEVEL:-error}" \
  -Dzookeeper.client.secure=true \
  -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty \
  -Dzookeeper.ssl.keyStore.location="$ZKTLS_DIR/client.pem" \
  -Dzookeeper.ssl.keyStore.type=PEM \
  -Dzookeeper.ssl.trustStore.location="$ZKTLS_DIR/ca.pem" \
  -Dzookeeper.ssl.trustStore.type=PEM \
  -cp "$out:$cp:$jars/slf4j-simple.jar" zktls.Main "$1" || status=$?
exit "$status"

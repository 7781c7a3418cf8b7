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
source "$here/../javasuite.sh"
java_suite_classpath "zookeeper, libnetty-java, openjdk-17-jdk-headless" zookeeper zookeeper-jute slf4j-api \
  netty-buffer netty-codec netty-common netty-handler netty-resolver netty-transport netty-transport-native-epoll \
  netty-transport-native-unix-common
java_suite_compile "$here/src" all,-path,-try
java_suite_run zktls.Main \
  -Dzookeeper.client.secure=true \
  -Dzookeeper.clientCnxnSocket=org.apache.zookeeper.ClientCnxnSocketNetty \
  -Dzookeeper.ssl.keyStore.location="$ZKTLS_DIR/client.pem" \
  -Dzookeeper.ssl.keyStore.type=PEM \
  -Dzookeeper.ssl.trustStore.location="$ZKTLS_DIR/ca.pem" \
  -Dzookeeper.ssl.trustStore.type=PEM \
  -- "$1"

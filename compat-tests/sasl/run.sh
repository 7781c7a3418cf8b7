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
source "$here/../javasuite.sh"
java_suite_classpath "zookeeper, openjdk-17-jdk-headless" zookeeper zookeeper-jute slf4j-api
java_suite_compile "$here/src" all,-path
java_suite_run zksasl.Main -Djava.security.auth.login.config="$ZKSASL_CLIENT_JAAS" -Dzookeeper.sasl.client=true \
  -- "$1" "$2"

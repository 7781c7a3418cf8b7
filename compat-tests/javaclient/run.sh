#!/usr/bin/env bash
# Compiles the Java client compat suite (src/) with javac against Debian's
# ZooKeeper 3.8 client jars and runs it against host:port. The suite prints
# one PASS/FAIL line per check and "N passed, M failed"; the exit status is
# the suite's (0 only if every check passed). Client logs go to stderr at the
# level in $ZKCOMPAT_LOG_LEVEL (default error; warn or info help debugging).
set -euo pipefail
if [ $# -ne 1 ]; then
  echo "usage: $0 host:port" >&2
  exit 2
fi
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../javasuite.sh"
java_suite_classpath "zookeeper, openjdk-17-jdk-headless" zookeeper zookeeper-jute slf4j-api
java_suite_compile "$here/src" all,-path
java_suite_run zkcompat.Main -- "$1"

#!/usr/bin/env bash
# Compiles LockPeer.java against the Debian jars (Curator 5.4, ZooKeeper 3.8
# client, via ../../curator/classpath.sh) and runs it.
#
#   peer.sh --build-only   compile into $LOCKPEER_BUILD_DIR (required)
#   peer.sh ARGS...        run LockPeer ARGS (compiled in $LOCKPEER_BUILD_DIR)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../../curator/classpath.sh"
out="${LOCKPEER_BUILD_DIR:?peer.sh needs LOCKPEER_BUILD_DIR}"
if [[ "${1:-}" == --build-only ]]; then
  mkdir -p "$out"
  if [[ ! "$out/LockPeer.class" -nt "$here/LockPeer.java" ]]; then
    javac -nowarn -Xlint:none -encoding UTF-8 -d "$out" -cp "$cp" "$here/LockPeer.java"
  fi
  exit 0
fi
exec java -Xmx128m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$out:$cp" LockPeer "$@"

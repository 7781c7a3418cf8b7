#!/usr/bin/env bash
# Compiles curatorlock/CuratorLock.java against the Debian jars and runs it.
#
#   curator_lock.sh HOST:PORT[,HOST:PORT...]   compile (into $CURATOR_LOCK_BUILD_DIR, or a
#                                               temporary directory) and run
#   curator_lock.sh --build-only               compile only ($CURATOR_LOCK_BUILD_DIR must be set)
#
# The jars come from ../curator/classpath.sh (Curator 5.4, ZooKeeper 3.8 client, slf4j-nop).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/../curator/classpath.sh"

case "${1:-}" in
  "" | -h | --help) echo "usage: curator_lock.sh HOST:PORT[,...] | --build-only" >&2; exit 2 ;;
esac
out="${CURATOR_LOCK_BUILD_DIR:-}"
if [[ -z "$out" ]]; then
  [[ "$1" == --build-only ]] && { echo "curator_lock.sh: --build-only needs CURATOR_LOCK_BUILD_DIR" >&2; exit 2; }
  out="$(mktemp -d "${TMPDIR:-/tmp}/curator-lock.XXXXXX")"
  trap 'rm -rf "$out"' EXIT
fi
if [[ ! "$out/CuratorLock.class" -nt "$here/curatorlock/CuratorLock.java" ]]; then
  javac -nowarn -Xlint:none -encoding UTF-8 -d "$out" -cp "$cp" "$here/curatorlock/CuratorLock.java"
fi
[[ "$1" == --build-only ]] && exit 0
java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$out:$cp" CuratorLock "$1"

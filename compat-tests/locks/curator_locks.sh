#!/usr/bin/env bash
# Compiles CuratorLocks.java against the Debian jars (the Curator suite's
# class path, ../curator/classpath.sh) into $1 and runs it against $2.
#   curator_locks.sh BUILD_DIR HOST:PORT
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
binding=slf4j-nop
source "$here/../curator/classpath.sh"
javac -nowarn -Xlint:none -encoding UTF-8 -d "$1" -cp "$cp" "$here/CuratorLocks.java"
exec java -Xmx256m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 -cp "$1:$cp" CuratorLocks "$2"

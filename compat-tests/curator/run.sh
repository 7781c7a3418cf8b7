#!/usr/bin/env bash
# Compiles the Curator 5.4 compatibility suite against the Debian jars and runs it.
#
#   run.sh HOST:PORT        compile (into $CURATOR_BUILD_DIR, or a temporary directory) and run
#   run.sh --build-only     compile only (into $CURATOR_BUILD_DIR, which must be set)
#
# With CURATOR_BUILD_DIR set, the classes are compiled once and reused while they are newer
# than every source. CURATOR_SUITE_LOG=simple shows the client's own logging (slf4j-simple,
# warn level, on stderr) instead of discarding it.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
src="$here/src"
binding=slf4j-nop
if [[ "${CURATOR_SUITE_LOG:-}" == simple ]]; then
  binding=slf4j-simple
fi
source "$here/classpath.sh"
for tool in javac java; do
  if ! command -v "$tool" >/dev/null; then
    echo "run.sh: $tool not found on PATH; install default-jdk-headless (OpenJDK 17)" >&2
    exit 3
  fi
done

build_only=false
addr=""
case "${1:-}" in
  --build-only) build_only=true ;;
  "" | -h | --help)
    echo "usage: run.sh HOST:PORT | run.sh --build-only (with CURATOR_BUILD_DIR)" >&2
    exit 2 ;;
  *) addr="$1" ;;
esac

cleanup=""
if [[ -n "${CURATOR_BUILD_DIR:-}" ]]; then
  out="$CURATOR_BUILD_DIR"
  mkdir -p "$out"
elif $build_only; then
  echo "run.sh: --build-only needs CURATOR_BUILD_DIR" >&2
  exit 2
else
  out="$(mktemp -d "${TMPDIR:-/tmp}/curator-suite.XXXXXX")"
  cleanup="$out"
fi
if [[ -n "$cleanup" ]]; then
  trap 'rm -rf "$cleanup"' EXIT
fi

stamp="$out/.built"
stale=true
if [[ -f "$stamp" ]] && [[ -z "$(find "$src" -name '*.java' -newer "$stamp" -print -quit)" ]]; then
  stale=false
fi
if $stale; then
  rm -f "$stamp"
  javac -nowarn -Xlint:none -encoding UTF-8 -d "$out" -cp "$cp" "$src"/*.java
  touch "$stamp"
fi
if $build_only; then
  exit 0
fi

props=(-Dorg.slf4j.simpleLogger.defaultLogLevel=warn -Dorg.slf4j.simpleLogger.logFile=System.err)
cmd=(java -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "${props[@]}" -cp "$out:$cp" CuratorSuite "$addr")
if [[ -z "$cleanup" ]]; then
  exec "${cmd[@]}"
fi
# A temporary build directory must be removed afterwards, so java runs as a child.
# Forward termination to it so a killed run.sh does not leave the JVM behind.
"${cmd[@]}" &
pid=$!
trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; rm -rf "$cleanup"; exit 143' TERM INT
set +e
wait "$pid"
rc=$?
set -e
exit "$rc"

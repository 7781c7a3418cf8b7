# Sourced by the run.sh of the Java suites (javaclient, sasl, tls): the
# steps they share. Each suite is compiled with javac against Debian's jars
# in /usr/share/java and run with the client's logs at $ZKCOMPAT_LOG_LEVEL
# (default error) on stderr.

jars=/usr/share/java

# java_suite_classpath HINT JAR...: sets cp to the named jars of $jars
# (names without .jar); exits 2 with HINT (the Debian packages to install)
# if one of them, slf4j-simple, javac or java is missing.
java_suite_classpath() {
  local hint="$1" j f
  shift
  cp=""
  for j in "$@" slf4j-simple; do
    f="$jars/$j.jar"
    if [ ! -f "$f" ]; then
      echo "missing $f: run scripts/install-deps.sh (Debian packages $hint)" >&2
      exit 2
    fi
    [ "$j" = slf4j-simple ] || cp="${cp:+$cp:}$f"
  done
  for j in javac java; do
    command -v "$j" >/dev/null || { echo "$j not found: run scripts/install-deps.sh" >&2; exit 2; }
  done
}

# java_suite_compile SRC LINT: compiles SRC's .java files with -Xlint:LINT
# -Werror into a temporary directory, $out, removed when the script exits.
java_suite_compile() {
  local sources
  out="$(mktemp -d)"
  trap 'rm -rf "$out"' EXIT
  mapfile -t sources < <(find "$1" -name '*.java' | sort)
  javac -Xlint:"$2" -Werror -d "$out" -cp "$cp" "${sources[@]}"
}

# java_suite_run MAIN [JVM flags...] -- [arguments...]: runs class MAIN of the
# compiled suite and exits with its status.
java_suite_run() {
  local main="$1" flags=() status=0
  shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do flags+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC \
    -Dorg.slf4j.simpleLogger.defaultLogLevel="${ZKCOMPAT_LOG_LEVEL:-error}" "${flags[@]}" \
    -cp "$out:$cp:$jars/slf4j-simple.jar" "$main" "$@" || status=$?
  exit "$status"
}

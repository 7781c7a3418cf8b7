# Sourced by the Curator programs' run scripts: sets cp to the Debian jars of
# Curator 5.4 and the ZooKeeper 3.8 client, with the slf4j binding named by
# $binding (default slf4j-nop), or exits 3 naming what to install.
jars=/usr/share/java
need=(curator-framework curator-recipes curator-client zookeeper zookeeper-jute slf4j-api guava "${binding:-slf4j-nop}")
cp=""
for j in "${need[@]}"; do
  if [[ ! -f "$jars/$j.jar" ]]; then
    echo "missing jar $jars/$j.jar; install with: apt-get install -y libcurator-framework-java libcurator-recipes-java libcurator-client-java zookeeper default-jdk-headless (see scripts/install-deps.sh)" >&2
    exit 3
  fi
  cp="$cp${cp:+:}$jars/$j.jar"
done
# Guava's failureaccess is a separate jar upstream; Debian folds it into guava.jar.
if [[ -f "$jars/failureaccess.jar" ]]; then
  cp="$cp:$jars/failureaccess.jar"
fi

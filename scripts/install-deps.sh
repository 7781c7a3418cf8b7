#!/usr/bin/env bash
# Installs what the tests need on Debian 12: the reference ZooKeeper and its
# zkCli, the C client shell, kazoo, Curator, zktop and tmux (drives zktop), Netty (TLS), Chromium
# (compat-tests/ui drives the web view headless), Patroni and PostgreSQL 15 (compat-tests/patroni). Idempotent and quick
# when everything is already there.
set -euo pipefail
pkgs=(zookeeper zookeeper-bin python3-kazoo libcurator-framework-java libcurator-recipes-java
      libcurator-client-java zktop tmux openjdk-17-jdk-headless libnetty-java
      chromium bsdutils  # bsdutils: script(1), the pty of internal/lockcmd's terminal test
      patroni postgresql-15)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "installing: ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q "${missing[@]}"
fi
go mod download

#!/usr/bin/env bash
# Installs what the build, the tests and the demo need on a Debian/Ubuntu machine (run as root):
# a JDK 17 and Maven to build; iproute2 and nft as the tests' oracle; libnftables1, which the agent
# calls through JNA. Safe to run again; does nothing where the packages are already there.
set -euo pipefail
packages=(iproute2 nftables libnftables1 maven openjdk-17-jdk-headless)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present (${packages[*]})"
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing ${missing[*]}; install them as root with apt-get (or your distribution's tools)" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

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
# promtool (Debian's prometheus package) checks deploy/components/monitoring's rules in MonitoringTest,
# which skips without it: installed when possible, never a reason to fail. The package's service is not
# wanted where systemd would start it.
optional_promtool() {
  command -v promtool >/dev/null 2>&1 && return 0
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 || return 0
  echo "setup: installing prometheus (for promtool)"
  { [ -n "${updated:-}" ] || apt-get update -qq; } && updated=1 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends prometheus >/dev/null \
    || echo "setup: could not install prometheus; MonitoringTest skips its promtool checks" >&2
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    systemctl disable --now prometheus >/dev/null 2>&1 || true
  fi
}
# podman, runc and catatonit (the pause process of a pod's infra container) run the agent's image from the rendered
# chart in the container-mode cluster tests (ContainerModeClusterTest), which skip without them: installed when
# possible, never a reason to fail.
optional_podman() {
  command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 && command -v catatonit >/dev/null 2>&1 \
    && return 0
  [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1 || return 0
  echo "setup: installing podman, runc and catatonit (for the container-mode cluster tests)"
  { [ -n "${updated:-}" ] || apt-get update -qq; } && updated=1 \
    && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman runc catatonit >/dev/null \
    || echo "setup: could not install podman; ContainerModeClusterTest skips" >&2
}
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all packages present (${packages[*]})"
  optional_promtool
  optional_podman
  exit 0
fi
if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "setup: missing ${missing[*]}; install them as root with apt-get (or your distribution's tools)" >&2
  exit 1
fi
echo "setup: installing ${missing[*]}"
apt-get update -qq
updated=1
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
optional_promtool
optional_podman

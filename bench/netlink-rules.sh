#!/usr/bin/env bash
# Rules/s of RtNetlink.apply against `ip -batch` and a per-rule `ip rule add` loop, in fresh
# network namespaces. Needs root. Usage: bench/netlink-rules.sh [repetitions] [sizes, e.g. 1000,10000]
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -d testbed/target/test-classes/io/egressservice/bench ] \
   || [ -n "$(find netlink/src api agent/src testbed/src -newer target/egress-service-agent.jar -name '*.java' -print -quit)" ]; then
  mvn -B -q -DskipTests package
fi
mkdir -p bench/results
out="bench/results/netlink-rules-$(date -u +%Y%m%dT%H%M%SZ).txt"
java -cp target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes io.egressservice.bench.NetlinkRulesBench "$@" | tee "$out"
echo "saved to $out"

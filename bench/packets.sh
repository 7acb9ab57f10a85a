#!/usr/bin/env bash
# Per-packet round-trip latency of traffic that did not opt in, through a "node" namespace holding the
# agent's state for 0 / 300 / 1,000 / 10,000 opted-in sources, in source and mark rule modes.
# Needs root. Usage: bench/packets.sh [round trips] [warm-up] [sizes, e.g. 0,300,1000,10000] [modes, e.g. source,mark]
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -f testbed/target/test-classes/io/egressservice/bench/PacketsBench.class ] \
   || [ -n "$(find netlink/src api agent/src testbed/src -newer target/egress-service-agent.jar -name '*.java' -print -quit)" ]; then
  mvn -B -q -DskipTests package
fi
mkdir -p bench/results
out="bench/results/packets-$(date -u +%Y%m%dT%H%M%SZ).txt"
timeout 600 java -cp target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes io.egressservice.bench.PacketsBench "$@" | tee "$out"
echo "saved to $out"

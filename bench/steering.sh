#!/usr/bin/env bash
# What steering costs, in the namespace cluster with the real agent processes: throughput and latency of a
# steered pod (node-b -> host node-a) against a pod on the host, side by side, and the per-packet cost for
# traffic that did not opt in on both nodes, without and with the agents' state.
# Needs root. Usage: bench/steering.sh [seconds per throughput run] [repeats] [round trips] [rule mode] [settings]
# (settings: none or a comma list of veth-gro, udp-gro-fwd, vx-gro-off, vx-gso-off, tnl-notrack, rps-node-a, no-guard: see SteeringPath#tune).
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -f testbed/target/test-classes/io/egressservice/bench/SteeringBench.class ] \
   || [ -n "$(find netlink/src api agent/src testbed/src -newer target/egress-service-agent.jar -name '*.java' -print -quit)" ]; then
  mvn -B -q -DskipTests package
fi
mkdir -p bench/results
out="bench/results/steering-$(date -u +%Y%m%dT%H%M%SZ).txt"
timeout 900 java -cp target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes io.egressservice.bench.SteeringBench "$@" | tee "$out"
echo "saved to $out"

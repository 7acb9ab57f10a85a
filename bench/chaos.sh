#!/usr/bin/env bash
# The soak of issue 30: random faults, one after another, on the namespace cluster (three nodes of three pods, the
# real agents, two allocator replicas, the API server behind a proxy) while EgressServices and endpoints churn and
# every pod sends a steady UDP stream; every datagram and every node's kernel judged against five invariants; a
# figures table at the end. The seed is printed; the same seed draws the same faults.
# Needs root. Usage: bench/chaos.sh [--seed N] [--minutes M (default 10)] [--mode source|mark] [--services 20-50]
# Exit 0: no invariant broken; 1: one was (the table lists the violations); 2: bad arguments.
# Not part of `mvn verify`; its short version is ChaosSmokeClusterTest.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] \
   || [ -n "$(find netlink/src/main agent/src/main testbed/src/main -newer target/egress-service-agent.jar -name '*.java' -print -quit)" ]; then
  mvn -B -q -DskipTests package
fi
mkdir -p bench/results
out="bench/results/chaos-$(date -u +%Y%m%dT%H%M%SZ).txt"
# every wait inside is bounded; this is the backstop (TERM runs the cluster's cleanup hook, KILL 60 s later)
set +e
timeout -k 60 7200 java -cp target/egress-service-agent.jar io.egressservice.testbed.chaos.ChaosMain "$@" | tee "$out"
rc=${PIPESTATUS[0]}
set -e
echo "saved to $out"
exit "$rc"

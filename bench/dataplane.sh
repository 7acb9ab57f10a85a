#!/usr/bin/env bash
# Dataplane.reconcile timings (cold, no-change, 1% change) against the issue targets, in fresh
# network namespaces. Needs root. Usage: bench/dataplane.sh [repetitions] [sizes, e.g. 1000,10000]
# bench/dataplane.sh 3 1000,10000,50000 fast-path: one endpoint changed, Dataplane.reconcileChanged against
# the full reconcile, in services of 10 endpoints (and their cold apply).
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -d testbed/target/test-classes/io/egressservice/bench ] \
   || [ -n "$(find netlink/src api agent/src testbed/src -newer target/egress-service-agent.jar -name '*.java' -print -quit)" ]; then
  mvn -B -q -DskipTests package
fi
mkdir -p bench/results
out="bench/results/dataplane-$(date -u +%Y%m%dT%H%M%SZ).txt"
java -cp target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes io.egressservice.bench.DataplaneBench "$@" | tee "$out"
echo "saved to $out"

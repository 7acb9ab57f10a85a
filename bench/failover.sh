#!/usr/bin/env bash
# Failover in the namespace cluster with the real agent processes: the host powered off (agent SIGKILLed, links
# down) while every node's pod sends a steady UDP stream; the time until the streams reach the external host
# through the new host with the LB IP (median, max), datagrams seen outside with another source, and a restart
# of the host's agent (moves, lost datagrams).
# Needs root. Usage: bench/failover.sh [runs (default 5)] [drop|pass (default drop)]
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -f target/test-classes/io/egressservice/bench/FailoverBench.class ] \
   || [ -n "$(find src -newer target/egress-service-agent.jar -name '*.java' -print -quit)" ]; then
  mvn -B -q -DskipTests package
fi
m2="${HOME}/.m2/repository"
cp="target/egress-service-agent.jar:target/test-classes"
cp="$cp:$(ls "$m2"/org/awaitility/awaitility/*/awaitility-*.jar | tail -1):$(ls "$m2"/org/hamcrest/hamcrest/*/hamcrest-*.jar | tail -1)"
mkdir -p bench/results
out="bench/results/failover-$(date -u +%Y%m%dT%H%M%SZ).txt"
timeout 900 java -cp "$cp" io.egressservice.bench.FailoverBench "$@" | tee "$out"
echo "saved to $out"

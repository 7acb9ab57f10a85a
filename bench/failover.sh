#!/usr/bin/env bash
# Failover in the namespace cluster with the real agent processes, while every node's pod sends a steady UDP
# stream, one row per fault (each on a fresh cluster), each printed with its goal:
#   poweroff  the host powered off (agent SIGKILLed, links down): time until the streams reach the external host
#             through the new host with the LB IP (median, max), datagrams seen with another source; then a
#             restart of the host's agent (moves, lost datagrams)
#   leader    the same with the agents running the allocator and its leader on the host (goal <= 6 s)
#   cordon    the host cordoned (planned move) with 2 ms streams: datagrams lost (goal 0)
#   loss      60 s of 50 % loss on the allocator's probes to every node: host moves (goal 0)
#   stall     8 s SIGSTOP of the host's agent: host moves (goal 0)
# Needs root. Usage: bench/failover.sh [runs (power-offs, default 5)] [drop|pass (default drop)] [row[=count]...]
#   rows default to all; counts default to poweroff=runs leader=3 cordon=10 loss=1 (windows) stall=3
#   e.g. bench/failover.sh 15 drop     bench/failover.sh 5 drop cordon=3 stall
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -f testbed/target/test-classes/io/egressservice/bench/FailoverBench.class ] \
   || [ -n "$(find netlink/src api agent/src testbed/src -newer target/egress-service-agent.jar -name '*.java' -print -quit)" ]; then
  mvn -B -q -DskipTests package
fi
m2="${HOME}/.m2/repository"
cp="target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes"
cp="$cp:$(ls "$m2"/org/awaitility/awaitility/*/awaitility-*.jar | tail -1):$(ls "$m2"/org/hamcrest/hamcrest/*/hamcrest-*.jar | tail -1)"
mkdir -p bench/results
out="bench/results/failover-$(date -u +%Y%m%dT%H%M%SZ).txt"
# every wait inside is bounded; this is the backstop (TERM runs the clusters' cleanup hooks, KILL 60 s later)
timeout -k 60 3600 java -cp "$cp" io.egressservice.bench.FailoverBench "$@" | tee "$out"
echo "saved to $out"

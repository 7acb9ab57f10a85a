#!/usr/bin/env bash
# Event-to-kernel latency (100 services, endpoint churn) and the agent's memory (1,000 services): the
# whole node agent against fabric8's mock API server (CRUD mode) and a throwaway network namespace.
# Needs root. Builds nothing: run `mvn -B -q -DskipTests package` and `mvn -B -q test-compile` first.
#
#   bench/agent-latency.sh [updates=300] [interval ms=30] [burst=200] [rss services=1000]
#       latency of the real process (java -jar target/egress-service-agent-node.jar run, the DaemonSet's
#       JVM flags and environment, the image's AppCDS archive, allocator included) with the API server in a
#       child JVM; the same with agent and API server in one JVM (default JVM flags); then the real
#       process's memory with 1,000 services.
#   bench/agent-latency.sh classlist
#       a training run of the real process that rewrites agent/src/main/appcds/agent.classlist, the list the
#       image's AppCDS archive is dumped from (Dockerfile). Commit the result.
#
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent-node.jar ] || [ ! -f testbed/target/test-classes/io/egressservice/bench/AgentLatencyBench.class ]; then
  echo "build first: mvn -B -q -DskipTests package && mvn -B -q test-compile" >&2; exit 2
fi
CP=target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes
MAIN=io.egressservice.bench.AgentLatencyBench
if [ "${1:-}" = "classlist" ]; then
  list=agent/src/main/appcds/agent.classlist
  tmp=$(mktemp)
  # Start, convergence, churn, /metrics scrapes, the allocator's leadership and status writes, SIGTERM.
  timeout 600 java -Dbench.dumpClassList="$tmp" -cp "$CP" "$MAIN" latency-process 100 100 30 100 50
  mv "$tmp" "$list"
  echo "wrote $list ($(wc -l < "$list") lines)"
  exit 0
fi
updates=${1:-300}; interval=${2:-30}; burst=${3:-200}; rss_services=${4:-1000}
mkdir -p bench/results
out="bench/results/agent-latency-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "== latency, the real process: java -cp $CP $MAIN latency-process 100 $updates $interval $burst 200"
  timeout 600 java -cp "$CP" "$MAIN" latency-process 100 "$updates" "$interval" "$burst" 200
  echo
  echo "== latency, agent and API server in this JVM: java -cp $CP $MAIN latency 100 $updates $interval $burst 200"
  timeout 600 java -cp "$CP" "$MAIN" latency 100 "$updates" "$interval" "$burst" 200
  echo
  echo "== rss, the real process: java -cp $CP $MAIN rss-process $rss_services"
  timeout 600 java -cp "$CP" "$MAIN" rss-process "$rss_services"
} 2>&1 | grep --line-buffered -v 'BlockedThreadChecker\|^\s*at \|^io.vertx.core.VertxException: Thread blocked' | tee "$out"
echo "saved to $out"

#!/usr/bin/env bash
# Event-to-kernel latency (100 services, endpoint churn) and the agent's memory (1,000 services, with the
# DaemonSet's JVM flags; the real `run` process and the agent in a bench JVM): the
# whole node agent against fabric8's mock API server (CRUD mode) and a throwaway network namespace.
# Needs root. Builds nothing: run `mvn -B -q -DskipTests package` and `mvn -B -q test-compile` first.
# Usage: bench/agent-latency.sh [updates=300] [interval ms=30] [burst=200] [rss services=1000]
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates network namespaces)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -f target/test-classes/io/egressservice/bench/AgentLatencyBench.class ]; then
  echo "build first: mvn -B -q -DskipTests package && mvn -B -q test-compile" >&2; exit 2
fi
updates=${1:-300}; interval=${2:-30}; burst=${3:-200}; rss_services=${4:-1000}
CP=target/egress-service-agent.jar:target/test-classes
MAIN=io.egressservice.bench.AgentLatencyBench
mkdir -p bench/results
out="bench/results/agent-latency-$(date -u +%Y%m%dT%H%M%SZ).txt"
{
  echo "== latency: java -cp $CP $MAIN latency 100 $updates $interval $burst 200"
  timeout 600 java -cp "$CP" "$MAIN" latency 100 "$updates" "$interval" "$burst" 200
  # Memory, with the flags and environment of deploy/daemonset.yaml (an explicit -Xms: the JVM's
  # default initial heap depends on the host's RAM, so flags without one do not reproduce a pod).
  jto=$(grep -A1 -- '- name: JAVA_TOOL_OPTIONS' deploy/daemonset.yaml | sed -n 's/^ *value: *"\(.*\)"/\1/p')
  arenas=$(grep -A1 -- '- name: MALLOC_ARENA_MAX' deploy/daemonset.yaml | sed -n 's/^ *value: *"\(.*\)"/\1/p')
  echo
  echo "== rss, the real process (java -jar ... run) with JAVA_TOOL_OPTIONS=\"$jto\" MALLOC_ARENA_MAX=$arenas: $MAIN rss-process $rss_services"
  timeout 600 java -cp "$CP" "$MAIN" rss-process "$rss_services"
  echo
  echo "== rss, the agent in a bench JVM, API server in a child JVM: MALLOC_ARENA_MAX=$arenas java $jto -cp $CP $MAIN rss-remote $rss_services"
  # shellcheck disable=SC2086
  MALLOC_ARENA_MAX=$arenas timeout 600 java $jto -cp "$CP" "$MAIN" rss-remote "$rss_services"
  echo
  echo "== rss, API server in this JVM: java $jto -cp $CP $MAIN rss $rss_services"
  # shellcheck disable=SC2086
  MALLOC_ARENA_MAX=$arenas timeout 600 java $jto -cp "$CP" "$MAIN" rss "$rss_services"
} 2>&1 | grep --line-buffered -v 'BlockedThreadChecker\|^\s*at \|^io.vertx.core.VertxException: Thread blocked' | tee "$out"
echo "saved to $out"

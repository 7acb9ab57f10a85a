#!/usr/bin/env bash
# Event-to-kernel latency (100 services, endpoint churn) and the agent's memory (1,000 services): the
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
  # Memory: fresh JVMs, default flags (on this host: G1, heap up to 1/4 of RAM) and -Xmx96m with SerialGC
  # (what the JVM picks itself in a container with <2 CPUs or <1792 MiB).
  for flags in "" "-Xmx96m -XX:+UseSerialGC"; do
    echo
    echo "== rss, API server in this JVM: java ${flags:-(default flags)} -cp $CP $MAIN rss $rss_services"
    # shellcheck disable=SC2086
    timeout 600 java $flags -cp "$CP" "$MAIN" rss "$rss_services"
    echo
    echo "== rss, API server in a child JVM: java ${flags:-(default flags)} -cp $CP $MAIN rss-remote $rss_services"
    # shellcheck disable=SC2086
    timeout 600 java $flags -cp "$CP" "$MAIN" rss-remote "$rss_services"
  done
} 2>&1 | grep --line-buffered -v 'BlockedThreadChecker\|^\s*at \|^io.vertx.core.VertxException: Thread blocked' | tee "$out"
echo "saved to $out"

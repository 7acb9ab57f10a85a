#!/usr/bin/env bash
# Issue 20's "Must show" figures, every row in one run: the real agent process (node jar, the DaemonSet's
# JAVA_TOOL_OPTIONS and environment, the image's AppCDS archive, allocator included) inside a memory cgroup
# limited to the DaemonSet's memory limit, against fabric8's mock API server in a child JVM, in throwaway network
# namespaces. Needs root. Builds nothing: run `mvn -B -q -DskipTests package && mvn -B -q test-compile` first.
#
#   bench/scale.sh                    every row (about 25 min with the code before issue 20)
#   bench/scale.sh change 5000        one scenario: change N [mark] | latency N | cold N [endpoints] [mark]
#                                     | idle N [others] | nftfloor N [mark] (no agent: one change's nft transaction)
#
# Properties (JAVA_OPTS): -Dbench.changes=50 -Dbench.warmupChanges=20 -Dbench.convergeLimitSeconds=300
# -Dbench.coldStartLimitSeconds=300 -Dbench.memoryLimitMiB=N, change/idle: -Dbench.eventsQuietSeconds=20
# -Dbench.eventsQuietLimitSeconds=720 (wait for the start's Events to stop), change: -Dbench.backgroundSeconds=10
# -Dbench.idleCpuSeconds=30 (0: no idle CPU phase), and AgentLatencyBench's (-Dbench.agentExtraJvmOptions=...,
# -Dbench.appcds=false, -Dbench.agentEnv=EGRESS_AGENT_ALLOCATOR=false for the DaemonSet's --allocator=false).
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (network namespaces, a memory cgroup)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent-node.jar ] || [ ! -f testbed/target/test-classes/io/egressservice/bench/ScaleBench.class ]; then
  echo "build first: mvn -B -q -DskipTests package && mvn -B -q test-compile" >&2; exit 2
fi
CP=target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes
MAIN=io.egressservice.bench.ScaleBench
prefix="esa-scale-$$"
# Whatever ended the bench (its own end, timeout, ^C): stop what is left in our cgroups (only our agents run
# there), then remove them.
cleanup() {
  for dir in $(find /sys/fs/cgroup -maxdepth 6 -type d -name "$prefix-*" 2>/dev/null); do
    for pid in $(cat "$dir/cgroup.procs" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do rmdir "$dir" 2>/dev/null && break; sleep 0.1; done
  done
}
trap cleanup EXIT
mkdir -p bench/results
out="bench/results/scale-$(date -u +%Y%m%dT%H%M%SZ).txt"
limit=${SCALE_TIMEOUT:-3600}
{
  echo "== $(date -u +%FT%TZ) $(git rev-parse --short HEAD 2>/dev/null || true); uptime:$(uptime)"
  echo "== java ${JAVA_OPTS:-} -cp $CP $MAIN $*"
  # shellcheck disable=SC2086
  timeout --kill-after=30 "$limit" java -Xmx1g ${JAVA_OPTS:-} -Dbench.cgroupPrefix="$prefix" -cp "$CP" "$MAIN" "$@"
  echo "== $(date -u +%FT%TZ); uptime:$(uptime)"
} 2>&1 | grep --line-buffered -v 'BlockedThreadChecker\|^\s*at \|^io.vertx.core.VertxException: Thread blocked' | tee "$out"
echo "saved to $out"

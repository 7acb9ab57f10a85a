#!/usr/bin/env bash
# The reconcile thread's CPU per reconcile, phase by phase (observe, facts, PlanInputs, Planner, Differ,
# apply), with the DaemonSet's JIT and GC flags, against a throwaway network namespace; no API server.
# Thread CPU time, so it holds on a busy machine. Needs root. Builds nothing: run
# `mvn -B -q -DskipTests package` and `mvn -B -q test-compile` first.
#
#   bench/reconcile-cpu.sh [services=100] [reconciles=3000] [incremental|full|plan]
# incremental (the default): the agent's fast path for an API change (the changed object converted alone, its
# service re-planned by IncrementalPlanner); full: every reconcile plans every service, as startup and resync do;
# plan: the incremental planning phases alone (the kernel observed and programmed once).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then echo "needs root (creates a network namespace)" >&2; exit 2; fi
if [ ! -f target/egress-service-agent.jar ] || [ ! -f testbed/target/test-classes/io/egressservice/bench/ReconcileCpuBench.class ]; then
  echo "build first: mvn -B -q -DskipTests package && mvn -B -q test-compile" >&2; exit 2
fi
exec java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx96m -Xmn12m -XX:ReservedCodeCacheSize=32m \
  -cp target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes io.egressservice.bench.ReconcileCpuBench "${1:-100}" "${2:-3000}" "${3:-incremental}"

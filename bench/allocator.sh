#!/usr/bin/env bash
# The allocator's CPU (thread CPU time of its worker, where every pass runs) against fabric8's mock API server in
# the same JVM, with the DaemonSet's JIT and GC flags: churn on slices no EgressService names, and single
# opted-in endpoint updates at several sizes. No kernel, no root. Builds nothing: run
# `mvn -B -q -DskipTests package` and `mvn -B -q test-compile` first.
#
#   bench/allocator.sh                          # both: unrelated 10000 20 10, then opted 100,1000,5000 40
#   bench/allocator.sh unrelated [services=10000] [seconds=20] [rate=10]
#   bench/allocator.sh opted [counts=100,1000,5000] [updates=40]
#
# Not part of `mvn verify`: the main class lives in the test sources and is not named *Test.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f target/egress-service-agent.jar ] || [ ! -f testbed/target/test-classes/io/egressservice/bench/AllocatorBench.class ]; then
  echo "build first: mvn -B -q -DskipTests package && mvn -B -q test-compile" >&2; exit 2
fi
# The heap is for the mock API server's copies of the objects; the JIT and GC flags are the DaemonSet's.
JAVA=(java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Xmx1g -cp target/egress-service-agent.jar:testbed/target/test-classes:agent/target/test-classes:netlink/target/test-classes
  io.egressservice.bench.AllocatorBench)
mkdir -p bench/results
out="bench/results/allocator-$(date -u +%Y%m%dT%H%M%SZ).txt"
if [ $# -eq 0 ]; then
  { timeout 900 "${JAVA[@]}" unrelated; timeout 1800 "${JAVA[@]}" opted; } 2>&1 | grep -v '^[0-9-]*T[0-9:.]*Z ' | tee "$out"
else
  timeout 1800 "${JAVA[@]}" "$@" 2>&1 | grep -v '^[0-9-]*T[0-9:.]*Z ' | tee "$out"
fi
echo "saved to $out"

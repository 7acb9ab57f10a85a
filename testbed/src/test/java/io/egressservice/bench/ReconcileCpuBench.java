package io.egressservice.bench;

import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.ChangeSet;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.Differ;
import io.egressservice.dataplane.KernelFacts;
import io.egressservice.dataplane.ObservedState;
import io.egressservice.netlink.Rule;
import io.egressservice.objects.ChangeFeed;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.EgressServices;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.IncrementalPlanner;
import io.egressservice.plan.NodeObservations;
import io.egressservice.plan.PlanDelta;
import io.egressservice.plan.NodeInputs;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.Planner;
import io.egressservice.plan.RuleSpec;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.concurrent.ThreadLocalRandom;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/**
 * The reconcile thread's CPU per reconcile, phase by phase, without an API server: the objects an
 * informer cache would hold for N LoadBalancerIP services x 5 endpoints, one endpoint replaced per
 * reconcile (a new EndpointSlice object, as an informer update gives), the same steps as
 * {@code Dataplane.plan} + {@code Dataplane.reconcile} against a throwaway namespace. Thread CPU time,
 * so the figures hold on a busy machine; kernel work done on the namespace thread shows in "wall". The
 * bytes this thread allocated per phase show what the young generation has to absorb.
 * Run it with the DaemonSet's JIT flags to see what the agent pays (bench/reconcile-cpu.sh).
 *
 * <p>Mode {@code incremental} (the default) goes through the agent's fast path for an API change: the changed
 * object is converted alone ({@link ChangeFeed}), {@link IncrementalPlanner} re-plans its service, and the drift
 * filter follows the changed rules; the dataplane phases stay the full observe/diff/apply until the deltaplane
 * branch's {@code reconcileChanged} replaces them. Mode {@code full} is the full path of every reconcile.
 *
 * <pre>java -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp ... ReconcileCpuBench [services=100] [reconciles=3000] [incremental|full]</pre>
 */
public final class ReconcileCpuBench {
  private static final String NODE = "node-a";
  private static final String NS = AgentLatencyBench.NS;

  private ReconcileCpuBench() {}

  public static void main(String[] args) throws Exception {
    int services = args.length > 0 ? Integer.parseInt(args[0]) : 100;
    int reconciles = args.length > 1 ? Integer.parseInt(args[1]) : 3000;
    boolean incremental = args.length <= 2 || !"full".equals(args[2]);
    // plan: the planning phases alone (the kernel is observed and programmed once), without the full dataplane
    // path's memory churn around them
    boolean planOnly = args.length > 2 && "plan".equals(args[2]);
    AgentLatencyBench objects = new AgentLatencyBench();
    objects.initEndpoints(services);
    List<EgressService> egressServices = new ArrayList<>();
    List<Service> svcs = new ArrayList<>();
    List<EndpointSlice> slices = new ArrayList<>();
    for (int i = 0; i < services; i++) {
      String name = AgentLatencyBench.name(i);
      EgressService es = EgressServices.of(NS, name, EgressServiceSpec.SourceIPBy.LOADBALANCERIP, "100", NODE);
      es.getMetadata().setCreationTimestamp(String.format(Locale.ROOT, "2026-12-01T10:%02d:%02dZ", i / 60 % 60, i % 60));
      egressServices.add(es);
      Service s = AgentLatencyBench.lbService(name, "172.30." + (i >> 8) + "." + (i & 255),
          "5.5." + ((i >> 8) & 255) + "." + (i & 255));
      svcs.add(s);
      slices.add(slice(objects, i));
    }
    Node node = new NodeBuilder().withNewMetadata().withName(NODE).endMetadata()
        .withNewSpec().withPodCIDR("10.128.0.0/16").withPodCIDRs(List.of("10.128.0.0/16")).endSpec()
        .withNewStatus().addNewAddress().withType("InternalIP").withAddress("192.168.1.10").endAddress().endStatus()
        .build();

    String netns = "esa-cpu-" + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    AgentLatencyBench.run("ip", "netns", "add", netns);
    ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    PlanConfig config = PlanConfig.defaults();
    PlanInputs.Memo memo = PlanInputs.Memo.forImmutableObjects(); // as the agent's: informer objects are replaced
    String[] phases = incremental
        ? new String[] {"observe (rule dumps, nft generation)", "facts (links, routes, rt_tables)",
            "ChangeFeed.drainInto (the changed object)", "IncrementalPlanner.plan", "drift filter (changed rules)",
            "Differ.wantedRules", "Differ.diff", "Dataplane.apply"}
        : new String[] {"observe (rule dumps, nft generation)", "facts (links, routes, rt_tables)",
            "PlanInputs.of", "Planner.plan", "Differ.wantedRules", "Differ.diff", "Dataplane.apply"};
    int planningPhases = incremental ? 3 : 2; // the phases after observe and facts that plan
    ChangeFeed feed = new ChangeFeed();
    IncrementalPlanner planner = feed.load(new ClusterObjects(egressServices, svcs, slices, List.of(node)), NODE, config,
        memo);
    Map<Rule, Integer> expected = new HashMap<>();
    try (Dataplane dataplane = Dataplane.open(LinuxKernel.open(Optional.of(netns)), AgentLatencyBench.PRIORITY, AgentLatencyBench.PROTOCOL)) {
      AgentLatencyBench.run("ip", "-n", netns, "route", "add", "unreachable", "default", "table", "100");
      int warmup = Math.max(200, reconciles / 2);
      long[] cpu = new long[phases.length];
      long[] wall = new long[phases.length];
      long[] bytes = new long[phases.length];
      int changes = 0;
      int fullPlans = 0;
      ObservedState[] lastObserved = new ObservedState[1];
      KernelFacts[] lastFacts = new KernelFacts[1];
      for (int r = 0; r < warmup + reconciles; r++) {
        if (r == warmup) {
          java.util.Arrays.fill(cpu, 0);
          java.util.Arrays.fill(wall, 0);
          java.util.Arrays.fill(bytes, 0);
          changes = 0;
        }
        int k = r % services;
        objects.endpoints[k][r / services % AgentLatencyBench.ENDPOINTS_PER_SERVICE] = objects.freshAddress();
        slices.set(k, slice(objects, k));
        ClusterObjects cluster = new ClusterObjects(egressServices, svcs, slices, List.of(node));

        int p = 0;
        boolean kernel = !planOnly || r == 0;
        ObservedState observed = kernel ? timed(threads, cpu, wall, bytes, p++, dataplane::observe) : lastObserved[0];
        lastObserved[0] = observed;
        p = 1;
        TreeSet<String> networks = new TreeSet<>(List.of("100"));
        KernelFacts facts = kernel ? timed(threads, cpu, wall, bytes, p++, () -> dataplane.facts(networks, observed))
            : lastFacts[0];
        lastFacts[0] = facts;
        p = 2;
        DesiredState desired;
        if (incremental) {
          EndpointSlice changed = slices.get(k);
          timed(threads, cpu, wall, bytes, p++, () -> {
            feed.slice(changed, false);
            return feed.drainInto(planner);
          });
          NodeObservations seen = new NodeObservations(facts.localAddresses(), facts.networks(), facts.existingMarks(),
              facts.existingSteerTables());
          PlanDelta delta = timed(threads, cpu, wall, bytes, p++, () -> planner.plan(seen));
          desired = delta.desired();
          timed(threads, cpu, wall, bytes, p++, () -> {
            if (delta.full()) {
              expected.clear();
              desired.rules().forEach(rule -> expected.merge(
                  Differ.toRule(rule, desired.ruleProtocol(), desired.markMask()), 1, Integer::sum));
            } else {
              delta.rulesAdded().forEach(rule -> expected.merge(
                  Differ.toRule(rule, desired.ruleProtocol(), desired.markMask()), 1, Integer::sum));
              delta.rulesRemoved().forEach(rule -> expected.computeIfPresent(
                  Differ.toRule(rule, desired.ruleProtocol(), desired.markMask()), (x, n) -> n == 1 ? null : n - 1));
            }
            return expected.size();
          });
          if (r >= warmup && delta.full()) {
            fullPlans++;
          }
        } else {
          NodeInputs in = timed(threads, cpu, wall, bytes, p++, () -> PlanInputs.of(NODE, cluster, facts.localAddresses(),
              facts.networks(), config, facts.existingMarks(), memo));
          desired = timed(threads, cpu, wall, bytes, p++, () -> Planner.plan(in));
        }
        if (!kernel) {
          continue;
        }
        Map<Rule, RuleSpec> wanted = timed(threads, cpu, wall, bytes, p++, () -> Differ.wantedRules(desired));
        ChangeSet diff = timed(threads, cpu, wall, bytes, p++, () -> Differ.diff(desired, wanted, observed));
        ApplyReport report = timed(threads, cpu, wall, bytes, p++, () -> dataplane.apply(diff));
        if (!report.succeeded()) {
          throw new IllegalStateException("refused: " + report.failures());
        }
        changes += report.applied().size();
      }
      long totalCpu = java.util.Arrays.stream(cpu).sum();
      long totalWall = java.util.Arrays.stream(wall).sum();
      System.out.printf(Locale.ROOT, "reconcile CPU, %s, %d services x %d endpoints, %d reconciles (one endpoint"
          + " replaced each, %.1f changes applied per reconcile, %d full plans); java %s, flags %s%n",
          planOnly ? "planning only" : incremental ? "incremental" : "full", services,
          AgentLatencyBench.ENDPOINTS_PER_SERVICE, reconciles, changes / (double) reconciles, fullPlans,
          System.getProperty("java.version"), ManagementFactory.getRuntimeMXBean().getInputArguments());
      System.out.println("| phase | thread CPU µs per reconcile | wall µs per reconcile | allocated KiB per reconcile |");
      System.out.println("|---|---:|---:|---:|");
      for (int i = 0; i < phases.length; i++) {
        System.out.printf(Locale.ROOT, "| %s | %.0f | %.0f | %.0f |%n", phases[i], cpu[i] / 1e3 / reconciles,
            wall[i] / 1e3 / reconciles, bytes[i] / 1024.0 / reconciles);
      }
      long planCpu = 0;
      long planBytes = 0;
      for (int i = 2; i < 2 + planningPhases; i++) {
        planCpu += cpu[i];
        planBytes += bytes[i];
      }
      System.out.printf(Locale.ROOT, "| planning (convert, plan%s) | %.0f | | %.0f |%n",
          incremental ? ", drift filter" : "", planCpu / 1e3 / reconciles, planBytes / 1024.0 / reconciles);
      System.out.printf(Locale.ROOT, "| all | %.0f | %.0f | %.0f |%n", totalCpu / 1e3 / reconciles,
          totalWall / 1e3 / reconciles, java.util.Arrays.stream(bytes).sum() / 1024.0 / reconciles);
    } finally {
      AgentLatencyBench.run("ip", "netns", "del", netns);
    }
  }

  private static EndpointSlice slice(AgentLatencyBench objects, int i) {
    return objects.slice(i);
  }

  private static <T> T timed(ThreadMXBean threads, long[] cpu, long[] wall, long[] bytes, int phase,
      java.util.function.Supplier<T> step) {
    com.sun.management.ThreadMXBean allocation = (com.sun.management.ThreadMXBean) threads;
    long b = allocation.getCurrentThreadAllocatedBytes();
    long c = threads.getCurrentThreadCpuTime();
    long w = System.nanoTime();
    T out = step.get();
    cpu[phase] += threads.getCurrentThreadCpuTime() - c;
    wall[phase] += System.nanoTime() - w;
    bytes[phase] += allocation.getCurrentThreadAllocatedBytes() - b;
    return out;
  }
}

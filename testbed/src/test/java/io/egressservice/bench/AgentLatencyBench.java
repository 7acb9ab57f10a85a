package io.egressservice.bench;

import io.egressservice.kernel.linux.LinuxKernel;
import ch.qos.logback.classic.Level;
import io.egressservice.controller.KubernetesEvents;
import io.egressservice.controller.NodeAgent;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.netlink.ChangeEvent;
import io.egressservice.netlink.ChangeGroup;
import io.egressservice.netlink.ChangeKind;
import io.egressservice.netlink.RtNetlink;
import io.egressservice.netlink.Subscription;
import io.egressservice.objects.EgressServices;
import io.egressservice.model.PlanConfig;
import io.egressservice.testbed.VersionEndpoint;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;
import org.slf4j.LoggerFactory;

/**
 * Benchmark, not a test (run by bench/agent-latency.sh, never by mvn verify): the whole node agent
 * (informers, planner, dataplane) in one JVM with fabric8's mock API server (CRUD mode) and a
 * throwaway network namespace.
 *
 * <ul>
 *   <li>{@code latency [services=100] [updates=300] [intervalMs=30] [burst=200] [warmup=200]}: S
 *       LoadBalancerIP EgressServices (network "100", host node-a), each with a LoadBalancer Service and
 *       one EndpointSlice of 5 endpoints on node-a; after convergence, endpoint churn: each update
 *       replaces one endpoint address of one slice with a fresh one. The time from just before the
 *       client call is sent to the arrival of the RTM_NEWRULE notification for the new source (a
 *       second, independent rtnetlink socket in the namespace) is recorded per update. Paced (one
 *       update every intervalMs, open loop: the sender does not wait for the kernel) and burst
 *       (back-to-back client calls) variants.
 *   <li>{@code rss [services=1000]}: the same shape converged; VmRSS and heap after System.gc() and
 *       idle, once before the agent starts (mock server + objects only) and once after convergence.
 *   <li>{@code rss-remote [services=1000]}: the same, but the mock server and the objects live in a child
 *       JVM ({@code server N}); this JVM holds only the agent (its own client over HTTP), so its VmRSS is
 *       the agent's alone.
 *   <li>{@code rss-process [services=1000]}: the real process ({@code java -jar target/egress-service-agent.jar run},
 *       allocator included) with the DaemonSet's JAVA_TOOL_OPTIONS (read from deploy/daemonset.yaml, or
 *       {@code -Dbench.agentJvmOptions}) against the child API server: its VmRSS once it has converged and gone
 *       idle, then after {@code jcmd PID GC.run}.
 *   <li>{@code rss-process-unrelated [services=50] [bystanders=10000]}: the same, with that many more Services and
 *       EndpointSlices (5 endpoints each) in the API server's lists that no EgressService names
 *       ({@link BystanderDispatcher}); run it with 0 and with 10000 for the two rows of the scale figures.
 * </ul>
 */
public final class AgentLatencyBench {
  static final String NODE = "node-a";
  static final String NS = "bench";
  static final int ENDPOINTS_PER_SERVICE = 5;
  static final int PRIORITY = PlanConfig.DEFAULT_PRIORITY;
  static final int PROTOCOL = PlanConfig.DEFAULT_RULE_PROTOCOL;
  static final long UPDATE_TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(5);
  /** Held so the JUL configuration is not garbage-collected with the logger. */
  static final java.util.logging.Logger MOCK_LOG = java.util.logging.Logger.getLogger("io.fabric8.mockwebserver");

  private KubernetesMockServer server;
  private KubernetesClient client;
  private String netns;
  private Dataplane dataplane;
  private NodeAgent agent;
  private RtNetlink observer;
  private Subscription subscription;
  /** Source address of a new rule -> nanoTime of its first NEW notification. */
  private final Map<IpPrefix, Long> arrivals = new ConcurrentHashMap<>();
  /** Endpoint address -> nanoTime a watch of the bench's own first saw it (API-side share of the latency). */
  private final Map<IpPrefix, Long> watched = new ConcurrentHashMap<>();
  private io.fabric8.kubernetes.client.Watch watch;
  /** Current endpoint addresses per service index. */
  String[][] endpoints;
  private int nextAddress = 1;
  /** Endpoints of each opted-in service's slice (ScaleBench: 10 for its cold starts). */
  int endpointsPerService = ENDPOINTS_PER_SERVICE;
  /** Services with a slice that did not opt in (no EgressService), in namespace {@link #OTHER_NS}. */
  int otherServices;
  /** Prefix of the network namespace's name, unique to a bench so parallel runs do not collide. */
  String netnsPrefix = "esa-lat-";
  /** Prepended to the real agent's command line (ScaleBench: a shell that enters a memory cgroup, then execs). */
  List<String> agentLauncher = List.of();
  static final String OTHER_NS = "other";

  public static void main(String[] args) throws Exception {
    MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
    ((ch.qos.logback.classic.Logger) LoggerFactory.getLogger("io.egressservice")).setLevel(Level.toLevel(System.getProperty("bench.agentLog", "WARN")));
    String mode = args.length > 0 ? args[0] : "latency";
    AgentLatencyBench bench = new AgentLatencyBench();
    try {
      switch (mode) {
        case "latency" -> bench.latency(intArg(args, 1, 100), intArg(args, 2, 300), intArg(args, 3, 30),
            intArg(args, 4, 200), intArg(args, 5, 200), false);
        case "latency-process" -> bench.latency(intArg(args, 1, 100), intArg(args, 2, 300), intArg(args, 3, 30),
            intArg(args, 4, 200), intArg(args, 5, 200), true);
        case "rss" -> bench.rss(intArg(args, 1, 1000));
        case "rss-remote" -> bench.rssRemote(intArg(args, 1, 1000));
        case "rss-process" -> bench.rssProcess(intArg(args, 1, 1000), 0);
        case "rss-process-unrelated" -> bench.rssProcess(intArg(args, 1, 50), intArg(args, 2, 10_000));
        case "server" -> {
          bench.endpointsPerService = intArg(args, 2, ENDPOINTS_PER_SERVICE);
          bench.otherServices = intArg(args, 3, 0);
          bench.serve(intArg(args, 1, 1000), intArg(args, 4, 0));
        }
        default -> throw new IllegalArgumentException("mode is latency or rss, not " + mode);
      }
    } finally {
      bench.close();
    }
    System.exit(0); // informer / vert.x threads are not all daemons
  }

  static int intArg(String[] args, int i, int dflt) {
    return args.length > i ? Integer.parseInt(args[i]) : dflt;
  }

  // ------------------------------------------------------------------------------------------ setup

  void startServerAndNamespace() {
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new VersionEndpoint(new KubernetesCrudDispatcher()), false);
    server.init();
    client = server.createClient();
    netns = netnsPrefix + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    run("ip", "netns", "add", netns);
    run("ip", "-n", netns, "link", "set", "lo", "up");
  }

  void createObjects(int services) {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName(NODE).endMetadata()
        .withNewSpec().withPodCIDR("10.128.0.0/16").withPodCIDRs(List.of("10.128.0.0/16")).endSpec()
        // Ready, as a real node: the allocator of the real process takes the host away from a node that is not
        .withNewStatus().addNewAddress().withType("InternalIP").withAddress("192.168.1.10").endAddress()
          .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus()
        .build()).create();
    initEndpoints(services);
    inParallel(services, i -> {
      String name = name(i);
      client.resources(EgressService.class)
          .resource(EgressServices.of(NS, name, EgressServiceSpec.SourceIPBy.LOADBALANCERIP, "100", NODE)).create();
      client.services().resource(lbService(name, "172.30." + (i >> 8) + "." + (i & 255),
          "5." + (5 + (i >> 16)) + "." + ((i >> 8) & 255) + "." + (i & 255))).create();
      client.discovery().v1().endpointSlices().resource(slice(i)).create();
    });
    createOtherServices();
  }

  /**
   * {@code body(0..n-1)} from a few threads: the mock server takes a create per round trip, so thousands of objects
   * are set up several times faster with several requests in flight. Fails with the first failure.
   */
  static void inParallel(int n, java.util.function.IntConsumer body) {
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(n > 200 ? 6 : 1);
    try {
      List<java.util.concurrent.Future<?>> done = new ArrayList<>();
      for (int i = 0; i < n; i++) {
        int k = i;
        done.add(pool.submit(() -> body.accept(k)));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted while creating the objects", e);
    } catch (java.util.concurrent.ExecutionException e) {
      throw new IllegalStateException("creating the objects failed", e.getCause());
    } finally {
      pool.shutdownNow();
    }
  }

  /**
   * {@link #otherServices} ClusterIP Services with one EndpointSlice of 5 endpoints each on another node, in their
   * own namespace, and no EgressService: what a cluster holds besides the opted-in set.
   */
  void createOtherServices() {
    inParallel(otherServices, i -> {
      String name = String.format(Locale.ROOT, "other-%05d", i);
      String clusterIp = "172." + (40 + (i >> 16)) + "." + ((i >> 8) & 255) + "." + (i & 255);
      client.services().resource(new ServiceBuilder()
          .withNewMetadata().withName(name).withNamespace(OTHER_NS).endMetadata()
          .withNewSpec().withType("ClusterIP").withClusterIP(clusterIp).withClusterIPs(clusterIp)
            .addToSelector("app", name).endSpec()
          .build()).create();
      List<io.fabric8.kubernetes.api.model.discovery.v1.Endpoint> eps = new ArrayList<>();
      for (int j = 0; j < 5; j++) {
        int k = i * 5 + j;
        eps.add(new EndpointBuilder().withAddresses("10." + (130 + (k >> 16)) + "." + ((k >> 8) & 255) + "." + (k & 255))
            .withNodeName("node-b").build());
      }
      client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder()
          .withNewMetadata().withName(name + "-1").withNamespace(OTHER_NS)
            .addToLabels("kubernetes.io/service-name", name)
            .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
          .withAddressType("IPv4").withEndpoints(eps).build()).create();
    });
  }

  /** The endpoint addresses the objects start with (the same sequence in every JVM). */
  void initEndpoints(int services) {
    endpoints = new String[services][endpointsPerService];
    for (int i = 0; i < services; i++) {
      for (int j = 0; j < endpointsPerService; j++) {
        endpoints[i][j] = freshAddress();
      }
    }
  }

  static String name(int i) {
    return String.format(Locale.ROOT, "svc-%04d", i);
  }

  /** 10.128.0.1, 10.128.0.2, ...: never reused, so every update's new source is unique. */
  String freshAddress() {
    int k = nextAddress++;
    if (k >= 65535) {
      throw new IllegalStateException("out of addresses in 10.128.0.0/16");
    }
    return "10.128." + (k >> 8) + "." + (k & 255);
  }

  static Service lbService(String name, String clusterIp, String lbIp) {
    return new ServiceBuilder()
        .withNewMetadata().withName(name).withNamespace(NS).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP(clusterIp).withClusterIPs(clusterIp)
          .addToSelector("app", name).endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp(lbIp).endIngress().endLoadBalancer().endStatus()
        .build();
  }

  EndpointSlice slice(int i) {
    return new EndpointSliceBuilder()
        .withNewMetadata().withName(name(i) + "-1").withNamespace(NS)
          .addToLabels("kubernetes.io/service-name", name(i))
          .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4")
        .withEndpoints(Arrays.stream(endpoints[i])
            .map(a -> new EndpointBuilder().withAddresses(a).withNodeName(NODE).build()).toList())
        .build();
  }

  void startAgent() {
    dataplane = Dataplane.open(LinuxKernel.open(Optional.of(netns)), PRIORITY, PROTOCOL);
    agent = new NodeAgent(client, dataplane,
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2)),
        new AgentMetrics(), new KubernetesEvents(client, NODE, Clock.systemUTC()), Clock.systemUTC());
    agent.start();
  }

  int expectedRules(int services) {
    return services * (endpointsPerService + 1);
  }

  /** How often to dump the rules while waiting: a dump of 50,000 rules costs the bench a CPU share the agent needs. */
  static long pollMillis(int expectedRules) {
    return Math.max(50, Math.min(1000, expectedRules / 20));
  }

  /** Our rules at the endpoint priority: one per endpoint and one per clusterIP. */
  /** The agent runs with --rule-mode mark: one fwmark rule per network, the endpoints in the nft map mark_v4. */
  boolean markMode;

  /**
   * The sources (endpoints and clusterIPs) the kernel steers: owned rules at the priority in source mode, elements
   * of the mark map in mark mode.
   */
  int programmedSources() {
    if (!markMode) {
      return ownedRules();
    }
    try {
      Process p = new ProcessBuilder("ip", "netns", "exec", netns, "nft", "-j", "list", "map", "inet",
          "egress_service_agent", "mark_v4").redirectErrorStream(false).start();
      byte[] out = p.getInputStream().readAllBytes();
      p.waitFor();
      if (p.exitValue() != 0) {
        return 0;
      }
      for (com.fasterxml.jackson.databind.JsonNode o : new com.fasterxml.jackson.databind.ObjectMapper().readTree(out)
          .path("nftables")) {
        if (o.has("map")) {
          return o.path("map").path("elem").size();
        }
      }
      return 0;
    } catch (IOException e) {
      throw new java.io.UncheckedIOException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    }
  }

  int ownedRules() {
    return (int) observer.listRules(IpFamily.V4).stream()
        .filter(r -> r.protocol() == PROTOCOL && r.priority() == PRIORITY).count();
  }

  /** Waits (bounded) until the kernel holds one rule per endpoint and per clusterIP; returns seconds. */
  double awaitConverged(int services, long startNanos, Duration limit) throws InterruptedException {
    int expected = expectedRules(services);
    long deadline = System.nanoTime() + limit.toNanos();
    int have = ownedRules();
    while (have != expected) {
      if (System.nanoTime() > deadline) {
        throw new IllegalStateException("not converged within " + limit + ": " + have + " of " + expected + " rules");
      }
      Thread.sleep(pollMillis(expected));
      have = ownedRules();
    }
    return (System.nanoTime() - startNanos) / 1e9;
  }

  void onRule(ChangeEvent e) {
    if (e.kind() == ChangeKind.NEW && e.rule().isPresent()) {
      long now = System.nanoTime();
      e.rule().get().source().ifPresent(src -> arrivals.putIfAbsent(src, now));
    }
  }

  // ---------------------------------------------------------------------------------------- latency

  record Update(IpPrefix address, long sentNanos, long returnedNanos) {}

  /** Returns the paced phase's p99 (ms from just before the client call; NaN if any update timed out). */
  double latency(int services, int updates, int intervalMs, int burst, int warmup, boolean realProcess)
      throws Exception {
    System.out.printf("event-to-kernel latency: %d LoadBalancerIP EgressServices x %d endpoints on %s; java %s, kernel %s,"
        + " %d CPUs; agent %s%n", services, endpointsPerService, NODE, System.getProperty("java.version"),
        System.getProperty("os.version"), Runtime.getRuntime().availableProcessors(),
        realProcess ? "in its own process (java -jar " + System.getProperty("bench.agentJar", AGENT_JAR)
            + " run), API server in a child JVM" : "and API server in this JVM");
    String url = null;
    String jvmOptions = "";
    if (realProcess) {
      jvmOptions = agentJvmOptions();
      url = startServerProcess(services);
      connect(url);
      newNamespaceAndObserver();
      initEndpoints(services); // as the child created them
    } else {
      startServerAndNamespace();
      observer = RtNetlink.open(Optional.of(netns));
    }
    watchRules();
    if (!realProcess) {
      createObjects(services);
    }
    watch = client.discovery().v1().endpointSlices().inNamespace(NS).watch(new io.fabric8.kubernetes.client.Watcher<>() {
      @Override
      public void eventReceived(Action action, EndpointSlice slice) {
        long now = System.nanoTime();
        slice.getEndpoints().forEach(ep -> ep.getAddresses().forEach(a -> watched.putIfAbsent(IpPrefix.parseHost(a), now)));
      }

      @Override
      public void onClose(io.fabric8.kubernetes.client.WatcherException cause) {}
    });
    long t0 = System.nanoTime();
    if (realProcess) {
      startAgentProcess(url, jvmOptions);
    } else {
      startAgent();
    }
    double converge = awaitConverged(services, t0, Duration.ofSeconds(120));
    Thread.sleep(1000);
    System.out.printf("converged: %d rules at priority %d after %.2f s from agent start; reconciles so far %d%n",
        ownedRules(), PRIORITY, converge, reconciles());

    // Slots (service, endpoint) in a seeded random order, used round-robin: a slot is not replaced again
    // before every other slot was, so no new address is superseded before the agent could apply it.
    List<int[]> slots = new ArrayList<>();
    for (int i = 0; i < services; i++) {
      for (int j = 0; j < endpointsPerService; j++) {
        slots.add(new int[] {i, j});
      }
    }
    Collections.shuffle(slots, new Random(42));
    int[] cursor = {0};

    if (warmup > 0) {
      Phase w = churn("warm-up (discarded)", warmup, intervalMs, slots, cursor);
      w.print(false);
    }
    Path agentStat = realProcess ? Path.of("/proc", Long.toString(agentProcess.pid()), "stat") : Path.of("/proc/self/stat");
    long ticksBefore = cpuTicks(agentStat);
    Map<String, long[]> threadsBefore = threadTicks(agentStat.getParent());
    long[] machineBefore = machineTicks();
    Phase paced = churn("paced, one update every " + intervalMs + " ms", updates, intervalMs, slots, cursor);
    long pacedTicks = cpuTicks(agentStat) - ticksBefore;
    Map<String, long[]> threadsAfter = threadTicks(agentStat.getParent());
    long[] machineAfter = machineTicks();
    Phase bursty = burst > 0 ? churn("burst, back-to-back client calls", Math.min(burst, slots.size()), 0, slots, cursor)
        : null;
    System.out.println();
    System.out.println("| variant | updates | timeouts (>5 s) | reconciles | p50 ms | p90 ms | p99 ms | max ms |"
        + " p50 from return ms | p99 from return ms | client call p50 ms | watch seen p50 ms | watch seen p99 ms |"
        + " after watch seen p50 ms | after watch seen p99 ms |");
    System.out.println("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    paced.print(true);
    if (bursty != null) {
      bursty.print(true);
    }
    double p99 = paced.percentile(paced.fromSend, 0.99);
    System.out.printf(Locale.ROOT, "target: paced p99 <= 100 ms: %.1f ms -> %s%n", p99,
        p99 <= 100 && paced.timeouts == 0 ? "MET" : "NOT MET");
    System.out.printf("observer notifications delivered %d, overflows %d%n", subscription.delivered(),
        subscription.overflows());
    // CPU time is steadier than wall time on a shared machine: the agent's cost whoever else runs.
    System.out.printf(Locale.ROOT, "%s CPU during the paced phase: %.2f s, %.1f ms per reconcile%n",
        realProcess ? "agent process" : "this JVM (agent and API server)", pacedTicks / 100.0,
        paced.reconciles == 0 ? Double.NaN : pacedTicks * 10.0 / paced.reconciles);
    printThreadCpu(threadsBefore, threadsAfter, pacedTicks, paced.reconciles);
    long machineTotal = machineAfter[0] - machineBefore[0];
    // A shared VM's hypervisor takes CPU away under load ("st" in vmstat): 40 % of it doubled every figure here.
    System.out.printf(Locale.ROOT, "machine during the paced phase: %.0f %% busy, %.0f %% stolen by the hypervisor%n",
        machineTotal == 0 ? Double.NaN : 100.0 * (machineAfter[1] - machineBefore[1]) / machineTotal,
        machineTotal == 0 ? Double.NaN : 100.0 * (machineAfter[2] - machineBefore[2]) / machineTotal);
    if (realProcess) {
      long pid = agentProcess.pid();
      System.out.printf(Locale.ROOT, "agent reconciles: %d, mean duration %.1f ms (its /metrics)%n", reconciles(),
          1000 * processMetric("egress_service_agent_reconcile_duration_seconds_sum") / reconciles());
      System.out.printf(Locale.ROOT, "agent process after the churn: RSS %.1f MiB (peak VmHWM %.1f MiB)%n",
          statusKib(pid, "VmRSS") / 1024.0, statusKib(pid, "VmHWM") / 1024.0);
      System.out.println("  " + String.join("\n  ", capture("jstat", "-gc", Long.toString(pid)).strip().split("\n")));
      stopAgentProcess();
    }
    return paced.timeouts == 0 ? p99 : Double.NaN;
  }

  final class Phase {
    final String name;
    final int count;
    long reconciles;
    int timeouts;
    double[] fromSend;
    double[] fromReturn;
    double[] call;
    double[] watch;
    /** From this JVM's watch seeing the update to the kernel: roughly the agent's own share. */
    double[] afterWatch;
    Phase(String name, int count) {
      this.name = name;
      this.count = count;
    }

    double percentile(double[] sorted, double p) {
      if (sorted.length == 0) {
        return Double.NaN;
      }
      int idx = (int) Math.ceil(p * sorted.length) - 1;
      return sorted[Math.max(0, Math.min(sorted.length - 1, idx))];
    }

    void print(boolean row) {
      if (!row) {
        System.out.printf(Locale.ROOT, "%s: %d updates, %d timeouts, %d reconciles, p50 %.1f ms, p99 %.1f ms%n",
            name, count, timeouts, reconciles, percentile(fromSend, 0.5), percentile(fromSend, 0.99));
        return;
      }
      System.out.printf(Locale.ROOT, "| %s | %d | %d | %d | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |%n",
          name, count, timeouts, reconciles, percentile(fromSend, 0.5), percentile(fromSend, 0.9),
          percentile(fromSend, 0.99), fromSend.length == 0 ? Double.NaN : fromSend[fromSend.length - 1],
          percentile(fromReturn, 0.5), percentile(fromReturn, 0.99), percentile(call, 0.5), percentile(watch, 0.5),
          percentile(watch, 0.99), percentile(afterWatch, 0.5), percentile(afterWatch, 0.99));
    }
  }

  /** Sends {@code n} updates (paced when intervalMs > 0, else back-to-back), then collects the arrivals. */
  Phase churn(String name, int n, int intervalMs, List<int[]> slots, int[] cursor) throws InterruptedException {
    Phase phase = new Phase(name, n);
    long reconcilesBefore = reconciles();
    List<Update> sent = new ArrayList<>(n);
    long start = System.nanoTime();
    for (int u = 0; u < n; u++) {
      if (intervalMs > 0) {
        long due = start + u * TimeUnit.MILLISECONDS.toNanos(intervalMs);
        while (System.nanoTime() < due) {
          LockSupport.parkNanos(due - System.nanoTime());
        }
      }
      int[] slot = slots.get(cursor[0]++ % slots.size());
      String address = freshAddress();
      endpoints[slot[0]][slot[1]] = address;
      EndpointSlice s = slice(slot[0]);
      IpPrefix key = IpPrefix.parseHost(address);
      long sentAt = System.nanoTime();
      client.discovery().v1().endpointSlices().resource(s).update();
      sent.add(new Update(key, sentAt, System.nanoTime()));
    }
    // Every update gets up to 5 s from its send.
    long deadline = sent.get(sent.size() - 1).sentNanos() + UPDATE_TIMEOUT_NANOS;
    while (System.nanoTime() < deadline && !sent.stream().allMatch(x -> arrivals.containsKey(x.address()))) {
      Thread.sleep(10);
    }
    Thread.sleep(300); // let the last reconcile finish before counting
    phase.reconciles = reconciles() - reconcilesBefore;
    List<Double> fs = new ArrayList<>();
    List<Double> fr = new ArrayList<>();
    List<Double> calls = new ArrayList<>();
    List<Double> seen = new ArrayList<>();
    List<Double> afterSeen = new ArrayList<>();
    for (Update x : sent) {
      calls.add((x.returnedNanos() - x.sentNanos()) / 1e6);
      Long w = watched.get(x.address());
      if (w != null) {
        seen.add((w - x.sentNanos()) / 1e6);
      }
      Long at = arrivals.get(x.address());
      if (at == null || at - x.sentNanos() > UPDATE_TIMEOUT_NANOS) {
        phase.timeouts++;
        continue;
      }
      fs.add((at - x.sentNanos()) / 1e6);
      fr.add((at - x.returnedNanos()) / 1e6);
      if (w != null) {
        afterSeen.add((at - w) / 1e6);
      }
    }
    phase.fromSend = fs.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    phase.fromReturn = fr.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    phase.watch = seen.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    phase.call = calls.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    phase.afterWatch = afterSeen.stream().mapToDouble(Double::doubleValue).sorted().toArray();
    return phase;
  }

  // -------------------------------------------------------------------------------------------- rss

  void rss(int services) throws Exception {
    System.out.printf("memory: %d LoadBalancerIP EgressServices x %d endpoints (%d endpoints, %d clusterIPs);"
        + " java %s, flags %s%n", services, ENDPOINTS_PER_SERVICE, services * ENDPOINTS_PER_SERVICE, services,
        System.getProperty("java.version"),
        java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments());
    System.out.printf("  max heap %.0f MiB, GC %s%n", Runtime.getRuntime().maxMemory() / 1048576.0,
        java.lang.management.ManagementFactory.getGarbageCollectorMXBeans().stream().map(b -> b.getName()).toList());
    Mem jvm = settle();
    System.out.printf(Locale.ROOT, "  %-58s %s%n", "bare JVM (bench class loaded)", jvm);
    startServerAndNamespace();
    observer = RtNetlink.open(Optional.of(netns));
    createObjects(services);
    Mem before = settle();
    System.out.printf(Locale.ROOT, "  %-58s %s%n", "mock server + " + services + " services' objects, no agent", before);
    long t0 = System.nanoTime();
    startAgent();
    double converge = awaitConverged(services, t0, Duration.ofSeconds(300));
    System.out.printf(Locale.ROOT, "  converged: %d rules after %.2f s, %d reconciles%n", ownedRules(), converge,
        agent.reconcileCount());
    Mem after = settle();
    System.out.printf(Locale.ROOT, "  %-58s %s%n", "+ agent started and converged", after);
    System.out.printf(Locale.ROOT, "  %-58s RSS %+.1f MiB, heap used %+.1f MiB%n", "difference (agent's share, estimate)",
        (after.rssKib - before.rssKib) / 1024.0, (after.heapUsed - before.heapUsed) / 1048576.0);
    System.out.printf(Locale.ROOT, "  %-58s RSS %.1f MiB%n", "estimate of an agent process (bare JVM + difference)",
        (jvm.rssKib + after.rssKib - before.rssKib) / 1024.0);
  }

  /** Child-JVM API server: prints its URL once the objects exist, then serves until stdin closes. */
  void serve(int services, int bystanders) throws Exception {
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new VersionEndpoint(bystanders > 0 ? new BystanderDispatcher(new KubernetesCrudDispatcher(), bystanders)
            : new KubernetesCrudDispatcher()), false);
    server.init();
    client = server.createClient();
    createObjects(services);
    System.out.println("URL " + client.getMasterUrl());
    System.out.flush();
    System.in.read(); // returns -1 when the parent closes the pipe or dies
  }

  void rssRemote(int services) throws Exception {
    System.out.printf("memory, API server in a child JVM: %d LoadBalancerIP EgressServices x %d endpoints; java %s,"
        + " flags %s%n", services, ENDPOINTS_PER_SERVICE, System.getProperty("java.version"),
        java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments());
    System.out.printf("  max heap %.0f MiB, GC %s%n", Runtime.getRuntime().maxMemory() / 1048576.0,
        java.lang.management.ManagementFactory.getGarbageCollectorMXBeans().stream().map(b -> b.getName()).toList());
    Mem jvm = settle();
    System.out.printf(Locale.ROOT, "  %-58s %s%n", "bare JVM (bench class loaded)", jvm);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(java, "-Xmx512m", "-cp", System.getProperty("java.class.path"),
        AgentLatencyBench.class.getName(), "server", Integer.toString(services))
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    try {
      var reader = new java.io.BufferedReader(new java.io.InputStreamReader(child.getInputStream()));
      String url = null;
      for (String line; (line = reader.readLine()) != null; ) {
        if (line.startsWith("URL ")) {
          url = line.substring(4).trim();
          break;
        }
      }
      if (url == null) {
        throw new IllegalStateException("the API server child exited without a URL");
      }
      // The agent's client as RunCommand builds it (AgentSerialization: no scan of fabric8's whole model).
      client = io.egressservice.controller.AgentSerialization.clientBuilder().withConfig(
          new io.fabric8.kubernetes.client.ConfigBuilder().withMasterUrl(url).withTrustCerts(true).withNamespace(NS)
              .build()).build();
      netns = netnsPrefix + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
      run("ip", "netns", "add", netns);
      run("ip", "-n", netns, "link", "set", "lo", "up");
      observer = RtNetlink.open(Optional.of(netns));
      long t0 = System.nanoTime();
      startAgent();
      double converge = awaitConverged(services, t0, Duration.ofSeconds(300));
      System.out.printf(Locale.ROOT, "  converged: %d rules after %.2f s%n", ownedRules(), converge);
      // The kernel converges before the agent is done: it then writes one Event per service (1,000 API calls).
      System.out.printf(Locale.ROOT, "  idle after a further %.1f s%n", awaitIdle(Path.of("/proc/self/stat"), Duration.ofSeconds(120)));
      Mem after = settle();
      System.out.printf(Locale.ROOT, "  %-58s %s%n", "agent started and converged (no API server in this JVM)", after);
      System.out.printf(Locale.ROOT, "  target: agent RSS <= 128 MiB: %.1f MiB -> %s%n", after.rssKib / 1024.0,
          after.rssKib <= 128 * 1024 ? "MET" : "NOT MET");
      Thread.sleep(Long.getLong("bench.holdSeconds", 0L) * 1000); // time for jcmd VM.native_memory
    } finally {
      close();
      agent = null;
      observer = null;
      dataplane = null;
      client = null;
      netns = null;
      child.getOutputStream().close();
      if (!child.waitFor(10, TimeUnit.SECONDS)) {
        child.destroyForcibly();
      }
    }
  }

  record Mem(long rssKib, long heapUsed, long heapCommitted) {
    @Override
    public String toString() {
      return String.format(Locale.ROOT, "RSS %.1f MiB, heap used %.1f MiB (committed %.1f MiB)", rssKib / 1024.0,
          heapUsed / 1048576.0, heapCommitted / 1048576.0);
    }
  }

  static Mem settle() throws InterruptedException {
    System.gc();
    Thread.sleep(3000);
    System.gc();
    Thread.sleep(1000);
    Runtime rt = Runtime.getRuntime();
    return new Mem(vmRssKib(), rt.totalMemory() - rt.freeMemory(), rt.totalMemory());
  }

  static long vmRssKib() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("VmRSS:")) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    throw new IllegalStateException("no VmRSS in /proc/self/status");
  }

  /**
   * Waits (bounded) until the process of {@code stat} (a /proc/PID/stat) has used less than 5 % of a CPU
   * over 2 s; returns the seconds waited. Convergence of the kernel is not the end of the agent's work.
   */
  static double awaitIdle(Path stat, Duration limit) throws InterruptedException {
    long start = System.nanoTime();
    long deadline = start + limit.toNanos();
    long ticks = cpuTicks(stat);
    while (System.nanoTime() < deadline) {
      Thread.sleep(2000);
      long now = cpuTicks(stat);
      if (now - ticks <= 10) { // USER_HZ is 100: 10 ticks in 2 s is 5 %
        return (System.nanoTime() - start) / 1e9;
      }
      ticks = now;
    }
    System.out.println("  WARNING: the process was still busy after " + limit);
    return (System.nanoTime() - start) / 1e9;
  }

  /** All, busy (user, nice, system, irq, softirq) and steal ticks of the machine, from /proc/stat. */
  static long[] machineTicks() {
    try {
      String[] f = Files.readAllLines(Path.of("/proc/stat")).get(0).trim().split("\\s+");
      long total = 0;
      for (int i = 1; i < Math.min(f.length, 9); i++) {
        total += Long.parseLong(f[i]);
      }
      long busy = Long.parseLong(f[1]) + Long.parseLong(f[2]) + Long.parseLong(f[3]) + Long.parseLong(f[6])
          + Long.parseLong(f[7]);
      return new long[] {total, busy, f.length > 8 ? Long.parseLong(f[8]) : 0};
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  /** user and system ticks per thread of a /proc/PID directory, keyed by "tid name". */
  static Map<String, long[]> threadTicks(Path procDir) {
    Map<String, long[]> out = new HashMap<>();
    try (var tasks = Files.list(procDir.resolve("task"))) {
      for (Path task : tasks.toList()) {
        try {
          String s = Files.readString(task.resolve("stat"));
          String name = s.substring(s.indexOf('(') + 1, s.lastIndexOf(')'));
          String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
          out.put(task.getFileName() + " " + name, new long[] {Long.parseLong(f[11]), Long.parseLong(f[12])});
        } catch (IOException | RuntimeException e) {
          // the thread ended meanwhile: its time is in the process total, reported as "threads that ended"
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    return out;
  }

  /** Where the paced phase's CPU went, by thread name (numbers folded), in ms per reconcile. */
  static void printThreadCpu(Map<String, long[]> before, Map<String, long[]> after, long totalTicks, long reconciles) {
    printThreadCpu(before, after, totalTicks, reconciles, "reconcile");
  }

  /** The same, per {@code unit} (e.g. "change"), {@code count} of them. */
  static void printThreadCpu(Map<String, long[]> before, Map<String, long[]> after, long totalTicks, long reconciles,
      String unit) {
    if (reconciles == 0) {
      return;
    }
    Map<String, long[]> byName = new TreeMap<>();
    long seen = 0;
    for (Map.Entry<String, long[]> e : after.entrySet()) {
      long[] b = before.getOrDefault(e.getKey(), new long[2]);
      long user = e.getValue()[0] - b[0];
      long sys = e.getValue()[1] - b[1];
      String name = e.getKey().substring(e.getKey().indexOf(' ') + 1).replaceAll("\\d+", "N");
      long[] sum = byName.computeIfAbsent(name, k -> new long[2]);
      sum[0] += user;
      sum[1] += sys;
      seen += user + sys;
    }
    byName.put("(threads that ended)", new long[] {Math.max(0, totalTicks - seen), 0});
    StringBuilder sb = new StringBuilder("  by thread, ms of CPU per " + unit + " (user+sys):");
    byName.entrySet().stream().filter(e -> e.getValue()[0] + e.getValue()[1] > 0)
        .sorted((x, y) -> Long.compare(y.getValue()[0] + y.getValue()[1], x.getValue()[0] + x.getValue()[1]))
        .forEach(e -> sb.append(String.format(Locale.ROOT, "%n    %-40s %5.1f (%.1f+%.1f)", e.getKey(),
            (e.getValue()[0] + e.getValue()[1]) * 10.0 / reconciles, e.getValue()[0] * 10.0 / reconciles,
            e.getValue()[1] * 10.0 / reconciles)));
    System.out.println(sb);
  }

  /** utime + stime of a /proc/PID/stat, in clock ticks. */
  static long cpuTicks(Path stat) {
    try {
      String s = Files.readString(stat);
      String[] f = s.substring(s.lastIndexOf(')') + 2).split(" ");
      return Long.parseLong(f[11]) + Long.parseLong(f[12]); // fields 14 and 15 of proc(5)
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
  }

  static long statusKib(long pid, String field) {
    try {
      for (String line : Files.readAllLines(Path.of("/proc", Long.toString(pid), "status"))) {
        if (line.startsWith(field + ":")) {
          return Long.parseLong(line.replaceAll("[^0-9]", ""));
        }
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    }
    throw new IllegalStateException("no " + field + " in /proc/" + pid + "/status");
  }

  /** The value of EGRESS_AGENT_JVM_OPTIONS in deploy/daemonset.yaml, the flags the agent runs with in a pod. */
  static String daemonSetJvmOptions() throws IOException {
    List<String> lines = Files.readAllLines(Path.of("deploy", "daemonset.yaml"));
    for (int i = 0; i + 1 < lines.size(); i++) {
      if (lines.get(i).trim().equals("- name: EGRESS_AGENT_JVM_OPTIONS")) {
        String v = lines.get(i + 1).trim();
        if (v.startsWith("value:")) {
          return v.substring("value:".length()).trim().replaceAll("^\"|\"$", "");
        }
      }
    }
    throw new IllegalStateException("no EGRESS_AGENT_JVM_OPTIONS in deploy/daemonset.yaml");
  }

  /** Other environment variables of the agent container with a literal value (e.g. MALLOC_ARENA_MAX). */
  static Map<String, String> daemonSetPlainEnv() throws IOException {
    Map<String, String> out = new java.util.LinkedHashMap<>();
    List<String> lines = Files.readAllLines(Path.of("deploy", "daemonset.yaml"));
    for (int i = 0; i + 1 < lines.size(); i++) {
      String l = lines.get(i).trim();
      String next = lines.get(i + 1).trim();
      if (l.startsWith("- name: ") && next.startsWith("value:") && !l.endsWith("JAVA_TOOL_OPTIONS")
          && !l.startsWith("- name: EGRESS_AGENT_")) {
        out.put(l.substring("- name: ".length()).trim(), next.substring("value:".length()).trim().replaceAll("^\"|\"$", ""));
      }
    }
    return out;
  }

  /** The jar the image runs (no demo, no embedded API server). */
  static final String AGENT_JAR = "target/egress-service-agent-node.jar";
  /** The class list the image's AppCDS archive is dumped from (see the Dockerfile). */
  static final Path CLASS_LIST = Path.of("agent", "src", "main", "appcds", "agent.classlist");
  /** Where the bench dumps its archive from {@link #CLASS_LIST}, as the image does at build time. */
  static final Path BENCH_ARCHIVE = Path.of("target", "agent-bench.jsa");

  private Process serverProcess;
  private Process agentProcess;
  private Path agentLog;
  private int agentMetricsPort;

  /** Reconciles so far of the agent under test: in this JVM, or the real process's from its /metrics. */
  long reconciles() {
    return agent != null ? agent.reconcileCount() : processReconciles();
  }

  /** The API server in a child JVM, with the objects of {@code services} created; returns its URL. */
  String startServerProcess(int services) throws IOException {
    return startServerProcess(services, 0);
  }

  String startServerProcess(int services, int bystanders) throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    // The mock server keeps every object in memory as JSON and as maps: 512 MiB hold 1,000 services, not 15,000.
    int objects = services + otherServices;
    serverProcess = new ProcessBuilder(java, objects > 2000 ? "-Xmx2g" : "-Xmx512m", "-cp",
        System.getProperty("java.class.path"), AgentLatencyBench.class.getName(), "server", Integer.toString(services),
        Integer.toString(endpointsPerService), Integer.toString(otherServices), Integer.toString(bystanders))
        .redirectError(ProcessBuilder.Redirect.INHERIT).start();
    return readUrl(serverProcess);
  }

  /**
   * The JVM options of the real agent: {@code -Dbench.agentJvmOptions}, else the DaemonSet's
   * JAVA_TOOL_OPTIONS; plus, as the image's entrypoint adds it, the AppCDS archive dumped from
   * {@link #CLASS_LIST} (unless {@code -Dbench.appcds=false}). {@code -Dbench.agentExtraJvmOptions} is appended.
   * With {@code -Dbench.dumpClassList=FILE} the run is a training run instead: no archive, the classes the agent
   * loads are written to FILE (how {@link #CLASS_LIST} is made: {@code bench/agent-latency.sh classlist}).
   */
  String agentJvmOptions() throws IOException {
    String options = System.getProperty("bench.agentJvmOptions", daemonSetJvmOptions());
    String dumpTo = System.getProperty("bench.dumpClassList", "");
    if (!dumpTo.isEmpty()) {
      options += " -XX:DumpLoadedClassList=" + dumpTo;
    } else if (Boolean.parseBoolean(System.getProperty("bench.appcds", "true"))) {
      options += " -XX:SharedArchiveFile=" + dumpArchive() + " -Xshare:on"; // on: fail loudly, never measure without
    }
    return (options + " " + System.getProperty("bench.agentExtraJvmOptions", "")).trim();
  }

  /** {@code java -Xshare:dump} from the committed class list, with the agent jar, as the Dockerfile does. */
  static Path dumpArchive() throws IOException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    String out = capture(java, "-Xshare:dump", "-Xlog:cds=error", "-XX:SharedClassListFile=" + CLASS_LIST,
        "-XX:SharedArchiveFile=" + BENCH_ARCHIVE, "-cp", System.getProperty("bench.agentJar", AGENT_JAR));
    if (!Files.isRegularFile(BENCH_ARCHIVE)) {
      throw new IllegalStateException("no AppCDS archive was dumped from " + CLASS_LIST + ": " + out);
    }
    System.out.printf(Locale.ROOT, "  AppCDS archive %s (%.1f MiB) dumped from %s (%d lines)%n", BENCH_ARCHIVE,
        Files.size(BENCH_ARCHIVE) / 1048576.0, CLASS_LIST, Files.readAllLines(CLASS_LIST).size());
    return BENCH_ARCHIVE;
  }

  /**
   * The real agent process ({@code java -jar <node jar> run}, allocator included, as in the DaemonSet) against
   * the child API server. Its configuration comes from fabric8's environment variables (no kubeconfig file: a
   * pod uses the in-cluster configuration), the environment of deploy/daemonset.yaml is added, and /metrics
   * listens on a free port (the bench reads the reconcile count there).
   */
  void startAgentProcess(String url, String jvmOptions) throws IOException {
    Map<String, String> extraEnv = daemonSetPlainEnv();
    // The allocator probes each host's agent on the Node's InternalIP (192.168.1.10 here, no such address on this
    // machine): after its 30 s grace it drained node-a and every rule went. The Node's Ready condition still counts.
    extraEnv.put("EGRESS_AGENT_HOST_PROBES", "false");
    if (markMode) {
      extraEnv.put("EGRESS_AGENT_RULE_MODE", "mark");
    }
    for (String kv : System.getProperty("bench.agentEnv", "").split(",")) { // e.g. MALLOC_ARENA_MAX=2,X=Y
      if (kv.contains("=")) {
        extraEnv.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
      }
    }
    System.out.printf("  the real agent process: JAVA_TOOL_OPTIONS=\"%s\"%s%n", jvmOptions,
        extraEnv.isEmpty() ? "" : ", env " + extraEnv);
    try (java.net.ServerSocket probe = new java.net.ServerSocket(0)) {
      agentMetricsPort = probe.getLocalPort();
    }
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    agentLog = Files.createTempFile("esa-agent-", ".log");
    List<String> command = new ArrayList<>(agentLauncher);
    command.addAll(List.of(java, "-jar", System.getProperty("bench.agentJar", AGENT_JAR), "run",
        "--node-name", NODE, "--netns", netns, "--metrics-port", Integer.toString(agentMetricsPort),
        "--lease-namespace", NS));
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(agentLog.toFile());
    Map<String, String> env = pb.environment();
    env.put("JAVA_TOOL_OPTIONS", jvmOptions);
    env.putAll(extraEnv);
    env.put("KUBERNETES_MASTER", url);
    env.put("KUBERNETES_TRUST_CERTIFICATES", "true");
    env.put("KUBERNETES_NAMESPACE", NS);
    env.put("KUBERNETES_AUTH_TRYKUBECONFIG", "false");
    env.put("KUBERNETES_AUTH_TRYSERVICEACCOUNT", "false");
    env.put("EGRESS_AGENT_LOG_LEVEL", System.getProperty("bench.agentLogLevel", "WARN"));
    agentProcess = pb.start();
  }

  /** The agent's client, as RunCommand builds it (AgentSerialization: no scan of fabric8's whole model). */
  void connect(String url) {
    client = io.egressservice.controller.AgentSerialization.clientBuilder().withConfig(
        new io.fabric8.kubernetes.client.ConfigBuilder().withMasterUrl(url).withTrustCerts(true).withNamespace(NS)
            .build()).build();
  }

  /** Records the arrival of every new rule's source in the namespace (call after the observer is open). */
  void watchRules() {
    subscription = observer.subscribe(EnumSet.of(ChangeGroup.IPV4_RULE), this::onRule,
        () -> System.out.println("  WARNING: observer notification overflow (ENOBUFS): some arrivals may be missing"));
  }

  /** Replaces endpoint {@code j} of service {@code i} with a never-used address; returns it. */
  IpPrefix replaceEndpoint(int i, int j) {
    String address = freshAddress();
    endpoints[i][j] = address;
    client.discovery().v1().endpointSlices().resource(slice(i)).update();
    return IpPrefix.parseHost(address);
  }

  /**
   * Mark mode's arrival: nanotime at which the namespace's nftables generation first differs from {@code before}
   * (the change's first commit; the mark element is in the same reconcile), waiting up to {@code limit}.
   */
  Optional<Long> awaitNftCommit(long before, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (System.nanoTime() < deadline) {
      if (nftGeneration() != before) {
        return Optional.of(System.nanoTime());
      }
      Thread.sleep(2);
    }
    return Optional.empty();
  }

  private io.egressservice.netlink.NetnsThread generationThread;
  private io.egressservice.netlink.NftGeneration generation;

  /** The bench namespace's nftables generation (a GETGEN over nfnetlink: no listing). */
  synchronized long nftGeneration() {
    if (generation == null) {
      generationThread = io.egressservice.netlink.NetnsThread.enter(Optional.of(netns));
      generation = io.egressservice.netlink.NftGeneration.open(generationThread);
    }
    return generation.read();
  }

  /** Nanotime of the first NEW rule with this source, waiting up to {@code limit}; empty when none came. */
  Optional<Long> awaitArrival(IpPrefix source, Duration limit) throws InterruptedException {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!arrivals.containsKey(source) && System.nanoTime() < deadline) {
      Thread.sleep(2);
    }
    return Optional.ofNullable(arrivals.get(source));
  }

  /** The API server child while it runs. */
  Optional<Process> serverProcess() {
    return Optional.ofNullable(serverProcess);
  }

  /** The real agent process while it runs. */
  Optional<Process> agentProcess() {
    return Optional.ofNullable(agentProcess);
  }

  /** What the real agent has written so far (stdout and stderr); "" when none runs. */
  String agentOutput() {
    try {
      return agentLog == null || !Files.exists(agentLog) ? "" : Files.readString(agentLog);
    } catch (IOException e) {
      return "";
    }
  }

  /** The HTTP status of GET {@code path} on the real process's metrics port; 0 while it does not answer. */
  int processHttpStatus(String path) {
    try {
      var http = java.net.http.HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(1)).build();
      return http.send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + agentMetricsPort + path)).timeout(Duration.ofSeconds(2)).build(),
          java.net.http.HttpResponse.BodyHandlers.discarding()).statusCode();
    } catch (IOException e) {
      return 0;
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 0;
    }
  }

  /** The reconcile count of the real process, from its reconcile-duration histogram on /metrics. */
  long processReconciles() {
    return (long) processMetric("egress_service_agent_reconcile_duration_seconds_count");
  }

  /** The sum over all label values of one sample name on the real process's /metrics. */
  /** The sum of the agent's /metrics samples whose line starts with {@code prefix}; 0 when there is none. */
  double processMetricLines(String prefix) {
    String name = prefix.contains("{") ? prefix.substring(0, prefix.indexOf('{')) : prefix;
    String body = scrape("/metrics?name%5B%5D=" + name);
    if (body.lines().noneMatch(l -> l.startsWith(name))) {
      body = scrape("/metrics");
    }
    return body.lines().filter(l -> l.startsWith(prefix))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.lastIndexOf(' ') + 1))).sum();
  }

  double processMetric(String name) {
    // name[] first: a whole scrape lists every per-service series (5,000 services: megabytes per read), which the
    // bench's reads would add to the agent's CPU and bytes per change.
    java.util.OptionalDouble filtered = metricIn(scrape("/metrics?name%5B%5D=" + name), name);
    if (filtered.isPresent()) {
      return filtered.getAsDouble();
    }
    return metricIn(scrape("/metrics"), name)
        .orElseThrow(() -> new IllegalStateException("no " + name + " on the agent's /metrics"));
  }

  private static java.util.OptionalDouble metricIn(String body, String name) {
    double sum = 0;
    boolean found = false;
    for (String line : body.split("\n")) {
      if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
        found = true;
      }
    }
    return found ? java.util.OptionalDouble.of(sum) : java.util.OptionalDouble.empty();
  }

  private String scrape(String path) {
    try {
      var http = java.net.http.HttpClient.newHttpClient();
      return http.send(java.net.http.HttpRequest.newBuilder(
              java.net.URI.create("http://127.0.0.1:" + agentMetricsPort + path)).build(),
          java.net.http.HttpResponse.BodyHandlers.ofString()).body();
    } catch (IOException e) {
      throw new IllegalStateException("the agent's /metrics: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }


  /** SIGTERM (the agent leaves the kernel state; the namespace goes in close()), then its warnings. */
  void stopAgentProcess() throws IOException, InterruptedException {
    if (agentProcess == null) {
      return;
    }
    agentProcess.destroy();
    if (!agentProcess.waitFor(30, TimeUnit.SECONDS)) {
      agentProcess.destroyForcibly();
    }
    List<String> logged = Files.readAllLines(agentLog).stream()
        .filter(l -> l.contains(" WARN ") || l.contains(" ERROR ") || l.contains("[warning]") || l.contains("[error]"))
        .toList();
    logged.stream().limit(8).forEach(l -> System.out.println("  agent log: " + l));
    if (logged.size() > 8) {
      System.out.println("  agent log: ... " + (logged.size() - 8) + " more warnings or errors");
    }
    if (Boolean.getBoolean("bench.keepAgentLog")) {
      System.out.println("  agent log kept: " + agentLog);
    } else {
      Files.deleteIfExists(agentLog);
    }
    agentProcess = null;
  }

  void newNamespaceAndObserver() {
    netns = netnsPrefix + Integer.toHexString(ThreadLocalRandom.current().nextInt(1 << 24));
    run("ip", "netns", "add", netns);
    run("ip", "-n", netns, "link", "set", "lo", "up");
    observer = RtNetlink.open(Optional.of(netns));
  }

  void rssProcess(int services, int bystanders) throws Exception {
    System.out.printf("memory of the real agent process: %d LoadBalancerIP EgressServices x %d endpoints; java %s%n",
        services, endpointsPerService, System.getProperty("java.version"));
    String jvmOptions = agentJvmOptions();
    try {
      String url = startServerProcess(services, bystanders);
      newNamespaceAndObserver();
      long t0 = System.nanoTime();
      startAgentProcess(url, jvmOptions);
      long pid = agentProcess.pid();
      double converge = awaitConverged(services, t0, Duration.ofSeconds(300));
      System.out.printf(Locale.ROOT, "  converged: %d rules after %.2f s from the process start%n", ownedRules(), converge);
      double idle = awaitIdle(Path.of("/proc", Long.toString(pid), "stat"), Duration.ofSeconds(180));
      Thread.sleep(5000);
      System.out.printf(Locale.ROOT, "  idle after a further %.1f s, then 5 s%n", idle);
      long rss = statusKib(pid, "VmRSS");
      System.out.printf(Locale.ROOT, "  %-58s RSS %.1f MiB (peak VmHWM %.1f MiB); %d rules in the kernel%n",
          "converged and idle, no forced GC", rss / 1024.0, statusKib(pid, "VmHWM") / 1024.0, ownedRules());
      if (ownedRules() != expectedRules(services)) {
        throw new IllegalStateException("the agent no longer holds every service's rules: measured the wrong state");
      }
      System.out.println("  " + String.join("\n  ", capture("jstat", "-gc", Long.toString(pid)).strip().split("\n")));
      capture("jcmd", Long.toString(pid), "GC.run");
      Thread.sleep(3000);
      long afterGc = statusKib(pid, "VmRSS");
      System.out.printf(Locale.ROOT, "  %-58s RSS %.1f MiB%n", "after jcmd PID GC.run and 3 s", afterGc / 1024.0);
      System.out.printf(Locale.ROOT, "  target: agent RSS <= 128 MiB: %.1f MiB -> %s%n", rss / 1024.0,
          rss <= 128 * 1024 ? "MET" : "NOT MET");
      Thread.sleep(Long.getLong("bench.holdSeconds", 0L) * 1000); // time for jcmd VM.native_memory
      if (!agentProcess.isAlive()) {
        throw new IllegalStateException("the agent exited with " + agentProcess.exitValue());
      }
    } finally {
      stopAgentProcess();
    }
  }

  static String readUrl(Process child) throws IOException {
    var reader = new java.io.BufferedReader(new java.io.InputStreamReader(child.getInputStream()));
    for (String line; (line = reader.readLine()) != null; ) {
      if (line.startsWith("URL ")) {
        return line.substring(4).trim();
      }
    }
    throw new IllegalStateException("the API server child exited without a URL");
  }

  static String capture(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      p.waitFor(60, TimeUnit.SECONDS);
      return out;
    } catch (IOException e) {
      return command[0] + ": " + e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  // ------------------------------------------------------------------------------------------ close

  void close() {
    if (watch != null) {
      watch.close();
    }
    synchronized (this) {
      if (generation != null) {
        generation.close();
        generationThread.close();
        generation = null;
      }
    }
    try {
      stopAgentProcess();
    } catch (IOException e) {
      System.err.println("could not read the agent's log: " + e.getMessage());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    if (serverProcess != null) {
      try {
        serverProcess.getOutputStream().close(); // the child serves until its stdin closes
        if (!serverProcess.waitFor(10, TimeUnit.SECONDS)) {
          serverProcess.destroyForcibly();
        }
      } catch (IOException e) {
        serverProcess.destroyForcibly();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
    if (agent != null) {
      agent.close();
    }
    if (subscription != null) {
      subscription.close();
    }
    if (observer != null) {
      observer.close();
    }
    if (dataplane != null) {
      dataplane.close();
    }
    if (client != null) {
      client.close();
    }
    if (server != null) {
      server.destroy();
    }
    if (netns != null) {
      try {
        run("ip", "netns", "del", netns);
      } catch (RuntimeException e) {
        System.err.println("could not delete netns " + netns + ": " + e.getMessage());
      }
    }
  }

  static void run(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes());
      if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed: " + out);
      }
    } catch (IOException e) {
      throw new IllegalStateException(e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

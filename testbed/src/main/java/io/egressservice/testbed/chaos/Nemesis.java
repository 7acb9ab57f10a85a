package io.egressservice.testbed.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.ApiProxy;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Namespace;
import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;

/**
 * The faults, drawn from one {@link Random} seeded by the run's seed, so a run's sequence of faults (kind, target,
 * length) is reproducible from the printed seed; their timing on a loaded machine is not. Kinds are drawn in rounds,
 * each kind once per round, so a run long enough for one round has drawn every kind. One fault at a time:
 * each ends before the next begins, so the convergence after it is its own.
 */
final class Nemesis {
  /** One injected fault: kind, what it hit, when it began (wall clock, as the logs have it) and began and ended (ns). */
  record Injected(Fault fault, String target, Instant startedAt, long startNanos, long endNanos,
      boolean behindAtLift, long churnStepsDuring) {
    boolean covers(long t, long marginNanos) {
      return t >= startNanos - marginNanos && t <= endNanos + marginNanos;
    }
  }

  private final Cluster cluster;
  private final Allocators allocators;
  private final Workload workload;
  private final Random random;
  private final List<Fault> kinds;
  private final boolean shortFaults;
  private final Consumer<String> log;
  /** Whether a node's kernel differs from the objects now (the plan for the API's objects). */
  private final BooleanSupplier kernelsBehind;
  /** Whether the kernels were behind the objects just before the API came back, in the fault under way. */
  private boolean behindAtLift;
  /** Processes taken down on purpose (agent nodes, allocator names): their exits are not violations. */
  private final Set<String> expectedDown = ConcurrentHashMap.newKeySet();
  private final List<Injected> injected = new ArrayList<>();
  /** The kinds not yet drawn in this round: every kind is drawn once per round, in an order drawn from the seed. */
  private final List<Fault> bag = new ArrayList<>();

  Nemesis(Cluster cluster, Allocators allocators, Workload workload, long seed, List<Fault> kinds, boolean shortFaults,
      BooleanSupplier kernelsBehind, Consumer<String> log) {
    this.kernelsBehind = kernelsBehind;
    this.cluster = cluster;
    this.allocators = allocators;
    this.workload = workload;
    this.random = new Random(seed);
    this.kinds = List.copyOf(kinds);
    this.shortFaults = shortFaults;
    this.log = log;
  }

  boolean expectedDown(String process) {
    return expectedDown.contains(process);
  }

  synchronized List<Injected> injected() {
    return List.copyOf(injected);
  }

  /** Draws and injects one fault, returning when it has ended (every step bounded). */
  Injected next() {
    if (bag.isEmpty()) {
      bag.addAll(kinds);
      Collections.shuffle(bag, random);
    }
    Fault f = bag.remove(bag.size() - 1);
    List<Cluster.Node> nodes = cluster.nodes();
    Cluster.Node node = nodes.get(random.nextInt(nodes.size()));
    long start = System.nanoTime();
    Instant startedAt = Instant.now();
    behindAtLift = false;
    long churnBefore = workload.churnSteps();
    String target = switch (f) {
      case AGENT_KILL -> {
        expectedDown.add(node.name());
        try {
          node.agent().kill();
          pause(200 + random.nextInt(2000));
          node.agent().start();
          awaitReady(node, f);
        } finally {
          expectedDown.remove(node.name());
        }
        yield node.name();
      }
      case AGENT_STOP -> {
        int seconds = 1 + random.nextInt(10);
        node.suspendAgent();
        try {
          pause(seconds * 1000L);
        } finally {
          node.resumeAgent();
        }
        yield node.name() + " " + seconds + " s";
      }
      case API_OUTAGE, API_HANG -> {
        int seconds = shortFaults ? 5 + random.nextInt(6) : 5 + random.nextInt(56);
        ApiProxy proxy = cluster.api().proxy().orElseThrow();
        // the churn goes on: the test's own client reaches the server, only the agents and the allocator are cut off
        proxy.mode(f == Fault.API_OUTAGE ? ApiProxy.Mode.REFUSE : ApiProxy.Mode.HANG);
        if (f == Fault.API_OUTAGE) {
          cluster.api().expireWatchHistory(); // a restarted API server's watch cache starts afresh: 410 Gone
        }
        try {
          pause(seconds * 1000L);
          behindAtLift = kernelsBehind.getAsBoolean(); // what the agents have to catch up with
        } finally {
          proxy.mode(ApiProxy.Mode.PASS);
        }
        yield seconds + " s";
      }
      case POWER_OFF -> {
        int seconds = shortFaults ? 3 + random.nextInt(5) : 5 + random.nextInt(20);
        expectedDown.add(node.name());
        try {
          node.powerOff();
          pause(seconds * 1000L);
          try {
            node.powerOn();
          } catch (IllegalStateException e) {
            awaitReady(node, f); // powered on, its agent started, but not ready within 60 s
          }
        } finally {
          expectedDown.remove(node.name());
        }
        yield node.name() + " " + seconds + " s";
      }
      case ALLOCATOR_LEADER_KILL -> {
        int leader = allocators.leader().orElse(random.nextInt(allocators.count()));
        String name = Allocators.name(leader);
        expectedDown.add(name);
        try {
          allocators.kill(leader);
          pause(1000 + random.nextInt(3000));
          allocators.start(leader);
        } finally {
          expectedDown.remove(name);
        }
        yield name;
      }
      case NODE_PAIR_LOSS -> {
        Cluster.Node other = nodes.get((node.index() % nodes.size()));
        int seconds = shortFaults ? 5 + random.nextInt(6) : 10 + random.nextInt(40);
        loss(node, other, true);
        loss(other, node, true);
        try {
          pause(seconds * 1000L);
        } finally {
          loss(node, other, false);
          loss(other, node, false);
        }
        yield node.name() + "<->" + other.name() + " " + seconds + " s";
      }
      case DRIFT -> drift(node);
      case RECREATE_BURST -> {
        List<String> names = workload.churnNames();
        int count = Math.min(names.size(), 5 + random.nextInt(Math.max(1, names.size())));
        workload.churn(false);
        try {
          for (int i = 0; i < count; i++) {
            int k = random.nextInt(names.size());
            cluster.api().deleteEgressService(names.get(k));
            workload.applyChurn(k, Optional.empty());
          }
        } finally {
          workload.churn(true);
        }
        yield count + " re-created";
      }
      case NODE_REBOOT -> reboot(node);
      case AGENT_CPU_LIMIT -> {
        int seconds = shortFaults ? 10 + random.nextInt(6) : 10 + random.nextInt(31);
        long pid = node.agent().pid().orElseThrow(() -> new IllegalStateException("no agent runs on " + node));
        // lifted once the kernels have converged (afterConvergence): the agent catches up at its limit
        limited = Optional.of(CpuLimit.apply(pid, node.name(), CpuLimit.MILLICORES));
        pause(seconds * 1000L);
        yield node.name() + " " + CpuLimit.MILLICORES + "m " + seconds + " s";
      }
      case ROLLING_UPDATE -> {
        for (Cluster.Node n : nodes) {
          expectedDown.add(n.name());
          try {
            n.agent().stop();
            n.agent().start();
            awaitReady(n, f);
          } finally {
            expectedDown.remove(n.name());
          }
          pause(500 + random.nextInt(1500));
        }
        yield nodes.size() + " agents";
      }
      case API_RESTART_IN_RELIST -> restartDuringRelist();
      case API_SLOW -> {
        int perRequest = 1 + random.nextInt(5);
        int seconds = shortFaults ? 5 + random.nextInt(6) : 10 + random.nextInt(31);
        ApiProxy proxy = cluster.api().proxy().orElseThrow();
        proxy.slow(Duration.ofSeconds(perRequest));
        try {
          pause(seconds * 1000L);
          behindAtLift = kernelsBehind.getAsBoolean();
        } finally {
          proxy.slow(Duration.ZERO);
        }
        yield perRequest + " s per request, " + seconds + " s";
      }
      case API_SILENT -> {
        int seconds = shortFaults ? 5 + random.nextInt(6) : 10 + random.nextInt(31);
        ApiProxy proxy = cluster.api().proxy().orElseThrow();
        proxy.mode(ApiProxy.Mode.SILENT); // what is open now is silenced for good
        proxy.mode(ApiProxy.Mode.PASS); // and new connections pass from now on
        pause(seconds * 1000L);
        behindAtLift = kernelsBehind.getAsBoolean();
        yield seconds + " s";
      }
      case WATCH_410_HANDSHAKE -> {
        int seconds = shortFaults ? 5 + random.nextInt(6) : 5 + random.nextInt(26);
        ApiProxy proxy = cluster.api().proxy().orElseThrow();
        long before = cluster.api().watchHandshakesGone();
        proxy.mode(ApiProxy.Mode.REFUSE); // a restart: every watch must reconnect
        cluster.api().expireWatchHistory();
        cluster.api().goneOnWatchHandshake(true);
        try {
          pause(1000);
          proxy.mode(ApiProxy.Mode.PASS);
          pause(seconds * 1000L);
          behindAtLift = kernelsBehind.getAsBoolean();
        } finally {
          proxy.mode(ApiProxy.Mode.PASS);
          cluster.api().goneOnWatchHandshake(false);
        }
        yield seconds + " s, " + (cluster.api().watchHandshakesGone() - before) + " handshakes answered 410";
      }
    };
    Injected done = new Injected(f, target, startedAt, start, System.nanoTime(), behindAtLift,
        workload.churnSteps() - churnBefore);
    synchronized (this) {
      injected.add(done);
    }
    log.accept(String.format("fault %-22s %-28s %.1f s", f, target, (done.endNanos() - start) / 1e9));
    return done;
  }

  /** Ends what a fault leaves in place until the kernels have converged after it (the CPU limit). */
  void afterConvergence() {
    limited.ifPresent(l -> {
      log.accept("cpu limit lifted after " + l.throttledPeriods() + " throttled periods");
      l.close();
    });
    limited = Optional.empty();
  }

  private Optional<CpuLimit> limited = Optional.empty();

  /**
   * A reboot as the node's own state sees it: the agent and the pods gone, the agent's kernel state with them; the
   * node's addresses and routes (not ours) come back as the boot configures them. The pods come back after the
   * agent is ready: a pod running on the rebooted node before its agent has written its state would leave with the
   * node's address (nothing of ours steers it yet), which the soak does not draw.
   */
  private String reboot(Cluster.Node node) {
    int seconds = shortFaults ? 2 + random.nextInt(4) : 3 + random.nextInt(13);
    Namespace ns = node.netns();
    expectedDown.add(node.name());
    try {
      node.agent().kill();
      ns.ip(node.pods().stream().map(p -> "link set p" + p.index() + " down").toArray(String[]::new));
      JudgedKernelState.flushOwned(ns);
      pause(seconds * 1000L);
      node.agent().start();
      awaitReady(node, Fault.NODE_REBOOT);
    } finally {
      List<String> up = new ArrayList<>();
      for (Cluster.Pod p : node.pods()) {
        up.add("link set p" + p.index() + " up");
        up.add("route replace " + p.ip(IpFamily.V4) + "/32 dev p" + p.index());
        up.add("route replace " + p.ip(IpFamily.V6) + "/128 dev p" + p.index());
      }
      ns.ip(up.toArray(String[]::new));
      expectedDown.remove(node.name());
    }
    return node.name() + " " + seconds + " s";
  }

  /**
   * The API server restarts (connections refused 1-3 s, watch history lost); the resumed watches are answered 410
   * Gone, so the agents and the allocator list again; at the first such answer (10 s at most) it restarts again, for
   * 3-10 s, while they are listing.
   */
  private String restartDuringRelist() {
    ApiProxy proxy = cluster.api().proxy().orElseThrow();
    int first = 1 + random.nextInt(3);
    int second = shortFaults ? 3 + random.nextInt(4) : 3 + random.nextInt(8);
    proxy.mode(ApiProxy.Mode.REFUSE);
    cluster.api().expireWatchHistory();
    long gone = cluster.api().watchesGone();
    try {
      pause(first * 1000L);
      proxy.mode(ApiProxy.Mode.PASS);
      long limit = System.nanoTime() + Duration.ofSeconds(10).toNanos();
      while (cluster.api().watchesGone() == gone && System.nanoTime() < limit) {
        pause(20);
      }
      boolean relisting = cluster.api().watchesGone() > gone;
      proxy.mode(ApiProxy.Mode.REFUSE);
      cluster.api().expireWatchHistory();
      pause(second * 1000L);
      behindAtLift = kernelsBehind.getAsBoolean();
      return first + " s, " + (relisting ? "during a relist" : "no 410 within 10 s") + ", " + second + " s";
    } finally {
      proxy.mode(ApiProxy.Mode.PASS);
    }
  }

  /** Agents restarted on purpose that were not ready 60 s later: node, fault, /readyz's answer, where the log is. */
  synchronized List<String> slowStarts() {
    return List.copyOf(slowStarts);
  }

  private final List<String> slowStarts = new ArrayList<>();

  /**
   * Waits until the restarted agent is ready; past 60 s that is a finding (its /readyz answer and a copy of its log
   * kept, as the cluster's directory goes with it), and the wait goes on, 120 s more at most, so the run can go on.
   */
  private void awaitReady(Cluster.Node node, Fault f) {
    try {
      node.agent().awaitReady();
      return;
    } catch (IllegalStateException e) {
      String readyz = readyz(node);
      Path copy = Path.of(System.getProperty("java.io.tmpdir"), "chaos-slow-start-" + node.name() + "-"
          + System.currentTimeMillis() + ".log");
      try {
        Files.copy(node.agent().log(), copy, StandardCopyOption.REPLACE_EXISTING);
      } catch (IOException io) {
        // the finding stands without its log
      }
      synchronized (this) {
        slowStarts.add(node.name() + " after " + f + ": /readyz " + readyz + " (log " + copy + ")");
      }
      log.accept("agent of " + node.name() + " not ready 60 s after its start: /readyz " + readyz + ", log " + copy);
    }
    long limit = System.nanoTime() + Duration.ofSeconds(120).toNanos();
    while (System.nanoTime() < limit && !readyz(node).startsWith("200")) {
      pause(500);
    }
  }

  private static String readyz(Cluster.Node node) {
    try {
      HttpResponse<String> r = HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:"
          + node.agent().metricsPort() + "/readyz")).timeout(Duration.ofSeconds(2)).build(),
          HttpResponse.BodyHandlers.ofString());
      return r.statusCode() + " " + r.body().trim();
    } catch (IOException e) {
      return "no answer: " + e.getMessage();
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return "interrupted";
    }
  }

  /**
   * 50 % loss from {@code from} to {@code to} on the node network (both families, every protocol, the steering
   * tunnel's packets included), in an nft table of its own in {@code from}: no netem in this kernel, and a qdisc
   * would hit every peer of the device, not one.
   */
  private static void loss(Cluster.Node from, Cluster.Node to, boolean on) {
    Namespace ns = from.netns();
    if (!on) {
      ns.tryExec("nft", "delete", "table", "inet", "esa_chaos_loss");
      return;
    }
    ns.nft("table inet esa_chaos_loss {\n"
        + "  chain out { type filter hook postrouting priority 0; policy accept;\n"
        + "    ip daddr " + to.ip(IpFamily.V4) + " numgen random mod 2 == 0 drop\n"
        + "    ip6 daddr " + to.ip(IpFamily.V6) + " numgen random mod 2 == 0 drop\n"
        + "  }\n"
        + "}\n");
  }

  /**
   * Someone deletes one thing of ours by hand: a rule of our protocol or a SNAT element of a churned service (those of
   * the judged pods would make their packets leak by the fault's own doing), or the steering device.
   */
  private String drift(Cluster.Node node) {
    Namespace ns = node.netns();
    int what = random.nextInt(3);
    if (what == 0) {
      for (JsonNode rule : ns.json("ip", "-j", "-4", "rule", "show")) {
        if (rule.path("protocol").asText("").equals(Integer.toString(JudgedKernelState.RULE_PROTOCOL))
            && rule.has("src") && !workload.judgedIps().contains(rule.path("src").asText())) {
          String pref = rule.path("priority").asText();
          String src = rule.path("src").asText() + (rule.has("srclen") ? "/" + rule.path("srclen").asText() : "");
          ns.tryExec("ip", "-4", "rule", "del", "priority", pref, "from", src);
          return node.name() + " rule from " + src;
        }
      }
    }
    if (what == 1) {
      List<String> elems = new ArrayList<>(JudgedKernelState.snat(ns));
      elems.removeIf(e -> e.contains(":")); // the v4 map
      // a judged pod's element gone would leak its packets by the fault's own doing, not the agent's
      elems.removeIf(e -> workload.judgedIps().contains(e.substring(0, e.indexOf(' '))));
      if (!elems.isEmpty()) {
        String e = elems.get(random.nextInt(elems.size()));
        String key = e.substring(0, e.indexOf(' '));
        ns.tryExec("nft", "delete", "element", "inet", JudgedKernelState.TABLE, "snat_v4", "{ " + key + " }");
        return node.name() + " snat element " + key;
      }
    }
    if (ns.tryExec("ip", "link", "del", JudgedKernelState.STEERING_DEVICE).exitCode() == 0) {
      return node.name() + " link " + JudgedKernelState.STEERING_DEVICE;
    }
    return node.name() + " (nothing to delete)";
  }

  static void pause(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  static Duration between(long a, long b) {
    return Duration.ofNanos(b - a);
  }
}

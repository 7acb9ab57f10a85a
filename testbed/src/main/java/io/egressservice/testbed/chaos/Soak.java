package io.egressservice.testbed.chaos;

import io.egressservice.ip.IpFamily;
import io.egressservice.model.RuleMode;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Consumer;

/**
 * A soak: the namespace cluster (three nodes of three pods, the agents, two allocator replicas, the API behind a
 * proxy, its watch history lost at each outage), the {@link Workload}, the {@link Nemesis} injecting one fault after another for the run's length, and the
 * invariants judged on the packets the external host saw and on the nodes' kernels:
 * <ol>
 *   <li>a judged opted-in pod's packet leaves only with its service's LB IP (a packet may be lost: dropped while the
 *       service has no host, or on a node that is down);
 *   <li>a pod that opted into nothing leaves with its node's uplink address through its own uplink, and loses no
 *       packet but while its own node is powered off ({@link #UNEXPLAINED_LOSS_TOLERANCE});
 *   <li>after each fault, every node's SNAT map equals the plan for the API's objects as they were at the fault's
 *       end (the churn goes on during every fault, the API faults included, and pauses while kernels are compared)
 *       within {@link #CONVERGENCE_LIMIT} ({@link Fault#API_SILENT}: plus {@link #SILENT_WATCH_BOUND}); the time
 *       is the figure: p50/p99, over all faults and per kind;
 *   <li>after every EgressService is deleted, nothing of ours is left on any node;
 *   <li>no agent or allocator process exits but those killed on purpose, and no thread dies; an agent started
 *       again is ready within 60 s.
 * </ol>
 * Every loop is bounded in count and time; the cluster is deleted on every exit path.
 */
public final class Soak {
  /** A converged node is one whose SNAT map equals its plan; past this, the fault left it wrong: a violation. */
  public static final Duration CONVERGENCE_LIMIT = Duration.ofSeconds(60);
  /**
   * How long an agent may trust a connection that delivers nothing before it abandons it (the agents' idle bound for
   * a watch that received no event nor bookmark); after {@link Fault#API_SILENT} the kernels must match within this
   * plus {@link #CONVERGENCE_LIMIT}.
   */
  public static final Duration SILENT_WATCH_BOUND = Duration.ofSeconds(90);
  /**
   * Datagrams a not-opted-in stream may lose outside its own node's power-off, as a share of those sent: a 2-core
   * machine shared with other jobs drops a few at the sockets (the sender starved, the server's queue full), which no
   * agent causes. Above it is a violation.
   */
  public static final double UNEXPLAINED_LOSS_TOLERANCE = 0.005;
  private static final int MAX_FAULTS = 2_000;

  /** What to run. */
  public record Settings(long seed, Duration duration, String ruleMode, int services, List<Fault> faults,
      boolean shortFaults, Duration streamInterval, Path evidenceRoot, Consumer<String> log) {
    public Settings {
      faults = List.copyOf(faults);
      if (services < 2 || services > 200) {
        throw new IllegalArgumentException("2 to 200 services, not " + services);
      }
      if (!ruleMode.equals("source") && !ruleMode.equals("mark")) {
        throw new IllegalArgumentException("--mode source or mark, not " + ruleMode);
      }
    }
  }

  /**
   * How long the kernels took to match the objects after one fault ended, and whether a node's kernel differed from
   * the objects at its end (for an API fault: just before the API came back), so the agents had to catch up, and
   * how many churn steps were made while it lasted.
   */
  public record Convergence(Fault fault, double seconds, boolean behindAtEnd, long churnStepsDuring) {}

  /** A broken invariant (1-5) and what showed it. */
  public record Violation(int invariant, String detail) {}

  /** The run's figures. */
  public record Figures(long seed, String ruleMode, int services, Duration ran, Map<Fault, Integer> faults,
      long packetsJudged, long lostOptedIn, long lostNotOptedIn, long churnSteps, long watchesGone,
      List<Convergence> convergence, List<String> agentResources, List<Violation> violations,
      Optional<Path> evidence) {
    /** Every fault's convergence time in seconds, in the order of the faults. */
    public List<Double> convergenceSeconds() {
      return convergence.stream().map(Convergence::seconds).toList();
    }

    public double convergence(double quantile) {
      return quantile(convergenceSeconds(), quantile);
    }

    /** The quantile of the convergence times after faults of {@code kind}; NaN when none was drawn. */
    public double convergence(Fault kind, double quantile) {
      return quantile(convergence.stream().filter(c -> c.fault() == kind).map(Convergence::seconds).toList(), quantile);
    }

    private static double quantile(List<Double> values, double quantile) {
      if (values.isEmpty()) {
        return Double.NaN;
      }
      List<Double> sorted = new ArrayList<>(values);
      Collections.sort(sorted);
      return sorted.get((int) Math.min(sorted.size() - 1, Math.ceil(quantile * sorted.size()) - 1));
    }

    /** The table the bench prints. */
    public String table() {
      StringBuilder sb = new StringBuilder();
      sb.append(String.format("chaos seed %d, mode %s, %d EgressServices, %.0f s%n", seed, ruleMode, services,
          ran.toMillis() / 1e3));
      sb.append(String.format("%-34s %s%n", "figure", "value"));
      faults.forEach((k, v) -> sb.append(String.format("%-34s %d%n", "faults " + k, v)));
      sb.append(String.format("%-34s %d%n", "faults total", faults.values().stream().mapToInt(i -> i).sum()));
      sb.append(String.format("%-34s %d%n", "churn steps", churnSteps));
      sb.append(String.format("%-34s %d%n", "watches answered 410 Gone", watchesGone));
      sb.append(String.format("%-34s %d%n", "packets judged", packetsJudged));
      sb.append(String.format("%-34s %d%n", "lost, opted in (allowed)", lostOptedIn));
      sb.append(String.format("%-34s %d%n", "lost, not opted in, unexplained", lostNotOptedIn));
      for (int i = 1; i <= 5; i++) {
        int inv = i;
        sb.append(String.format("%-34s %d%n", "violations of invariant " + i,
            violations.stream().filter(v -> v.invariant() == inv).count()));
      }
      sb.append(String.format("%-34s %.2f / %.2f s (%d faults, %d with a node behind at the end)%n",
          "convergence p50 / p99", convergence(0.5), convergence(0.99), convergence.size(),
          convergence.stream().filter(Convergence::behindAtEnd).count()));
      for (Fault k : faults.keySet()) {
        sb.append(String.format("%-34s %.2f / %.2f s (%d of %d behind)%n", "  after " + k, convergence(k, 0.5),
            convergence(k, 0.99), convergence.stream().filter(c -> c.fault() == k && c.behindAtEnd()).count(),
            convergence.stream().filter(c -> c.fault() == k).count()));
      }
      agentResources.forEach(r -> sb.append(r).append('\n'));
      violations.stream().limit(20).forEach(v -> sb.append("  violation (").append(v.invariant()).append(") ")
          .append(v.detail()).append('\n'));
      evidence.ifPresent(e -> sb.append("evidence (logs, objects, kernels, timeline): ").append(e).append('\n'));
      return sb.toString();
    }
  }

  private Soak() {}

  /** Builds the cluster, runs the soak, judges, deletes everything; returns the figures. */
  public static Figures run(Settings s) {
    s.log().accept("chaos: seed " + s.seed() + " (reproduce with --seed " + s.seed() + "), " + s.duration().toSeconds()
        + " s, mode " + s.ruleMode() + ", " + s.services() + " EgressServices, faults " + s.faults());
    List<Violation> violations = Collections.synchronizedList(new ArrayList<>());
    try (Cluster c = Cluster.builder().node("node-a", 2, Workload.PODS_PER_NODE).node("node-b", 1, Workload.PODS_PER_NODE)
        .node("node-c", 2, Workload.PODS_PER_NODE)
        .agentArgs("--allocator=false", "--rule-mode", s.ruleMode(), "--no-host=drop").apiThroughProxy()
        .expiringWatches().progress(s.log()).start();
        Allocators allocators = new Allocators(c, 2);
        Workload w = new Workload(c, s.seed(), s.services(), s.streamInterval())) {
      awaitJudgedPodsSteered(c, w);
      RuleMode mode = RuleMode.fromFlag(s.ruleMode());
      Nemesis nemesis = new Nemesis(c, allocators, w, s.seed(), s.faults(), s.shortFaults(),
          () -> !differences(c, mode).isEmpty(), s.log());
      Evidence evidence = new Evidence(s.evidenceRoot(), s.seed(), s.ruleMode(), c, nemesis::injected, s.log());
      if (s.faults().contains(Fault.AGENT_CPU_LIMIT)) {
        s.log().accept("cpu limit: " + CpuLimit.mechanism());
      }
      ExitWatch exits = new ExitWatch(c, allocators, nemesis, violations, evidence);
      w.onWrongSource(evidence::snapshot);
      List<String> resources = new ArrayList<>();
      Map<String, long[]> before = resources(c);
      w.start();
      long t0 = System.nanoTime();
      long end = t0 + s.duration().toNanos();
      List<Convergence> convergence = new ArrayList<>();
      java.util.Random pace = new java.util.Random(s.seed() + 1);
      int count = 0;
      while (System.nanoTime() < end && count++ < MAX_FAULTS) {
        Nemesis.pause(1000 + pace.nextInt(3000)); // churn and traffic alone for a while
        Nemesis.Injected f = nemesis.next();
        w.churn(false); // the objects hold still as they were at the fault's end while the kernels are compared
        try {
          converge(c, mode, f, convergence, violations, evidence, s.log());
        } finally {
          nemesis.afterConvergence();
          w.churn(true);
        }
      }
      Duration ran = Duration.ofNanos(System.nanoTime() - t0);
      w.churn(false);
      Nemesis.pause(1000); // the last datagrams reach the servers
      Map<String, long[]> after = resources(c);
      w.close();
      exits.close();
      long[] judged = judge(c, w, nemesis, s.streamInterval(), violations);
      nothingLeft(c, w, violations, evidence, s.log());
      threadsAlive(c, violations);
      nemesis.slowStarts().forEach(x -> violations.add(new Violation(5, "restarted agent not ready in 60 s: " + x)));
      for (Cluster.Node n : c.nodes()) {
        long[] b = before.get(n.name());
        long[] a = after.get(n.name());
        resources.add(String.format("%-34s RSS %d -> %d MiB, CPU %.1f -> %.1f s (pid %d -> %d)",
            "agent " + n.name(), b[2] / 1024, a[2] / 1024, b[1] / 100.0, a[1] / 100.0, b[0], a[0]));
      }
      Map<Fault, Integer> byKind = new EnumMap<>(Fault.class);
      nemesis.injected().forEach(i -> byKind.merge(i.fault(), 1, Integer::sum));
      Figures figures = new Figures(s.seed(), s.ruleMode(), s.services(), ran, byKind, judged[0], judged[1],
          judged[2], w.churnSteps(), c.api().watchesGone(), List.copyOf(convergence), resources,
          List.copyOf(violations), Optional.empty());
      if (violations.isEmpty()) {
        return figures;
      }
      Path kept = evidence.finish(figures.violations(), figures.table());
      s.log().accept("violations: the logs, objects, kernels and fault timeline are kept in " + kept);
      return new Figures(figures.seed(), figures.ruleMode(), figures.services(), figures.ran(), figures.faults(),
          figures.packetsJudged(), figures.lostOptedIn(), figures.lostNotOptedIn(), figures.churnSteps(),
          figures.watchesGone(), figures.convergence(), figures.agentResources(), figures.violations(),
          Optional.of(kept));
    }
  }

  /** Both judged services have a host, and a new flow of every judged pod leaves with its LB IP (60 s at most). */
  private static void awaitJudgedPodsSteered(Cluster c, Workload w) {
    long limit = System.nanoTime() + Duration.ofSeconds(90).toNanos();
    for (Workload.Sender s : w.senders()) {
      if (s.lbIp().isEmpty()) {
        continue;
      }
      while (true) {
        Traffic.Probe p = c.traffic().udp(s.pod().name(), io.egressservice.testbed.Addresses.EXTERNAL_V4);
        if (p.seen().stream().anyMatch(x -> x.source().equals(s.lbIp().get()))) {
          break;
        }
        if (System.nanoTime() > limit) {
          throw new IllegalStateException("the judged pod " + s.pod().name() + " does not leave with "
              + s.lbIp().get() + " within 90 s of the start; last seen " + p.seen());
        }
        Nemesis.pause(200);
      }
    }
  }

  /** Invariant 3: polls every node's SNAT map against its plan until all match; the time from the fault's end. */
  private static void converge(Cluster c, RuleMode mode, Nemesis.Injected f, List<Convergence> out,
      List<Violation> violations, Evidence evidence, Consumer<String> log) {
    Duration allowed = f.fault() == Fault.API_SILENT ? CONVERGENCE_LIMIT.plus(SILENT_WATCH_BOUND) : CONVERGENCE_LIMIT;
    long limit = f.endNanos() + allowed.toNanos();
    Map<String, String> diff = Map.of();
    boolean behind = f.behindAtLift();
    while (System.nanoTime() < limit) {
      diff = differences(c, mode);
      if (diff.isEmpty()) {
        out.add(new Convergence(f.fault(), (System.nanoTime() - f.endNanos()) / 1e9, behind, f.churnStepsDuring()));
        return;
      }
      behind = true;
      Nemesis.pause(100);
    }
    String what = "after " + f.fault() + " " + f.target() + " not converged in " + allowed.toSeconds()
        + " s: " + diff;
    violations.add(new Violation(3, what));
    log.accept("not converged after " + f.fault() + ": " + diff);
    evidence.snapshot(what);
  }

  /** Per node, what its SNAT map lacks ({@code -}) and holds beyond its plan ({@code +}); empty when all match. */
  private static Map<String, String> differences(Cluster c, RuleMode mode) {
    Map<String, String> out = new java.util.TreeMap<>();
    for (Cluster.Node n : c.nodes()) {
      Set<String> want = JudgedKernelState.plannedSnat(c.api(), n.name(), mode);
      Set<String> have = JudgedKernelState.snat(n.netns());
      if (!want.equals(have)) {
        Set<String> missing = new TreeSet<>(want);
        missing.removeAll(have);
        Set<String> extra = new TreeSet<>(have);
        extra.removeAll(want);
        out.put(n.name(), "-" + missing + " +" + extra);
      }
    }
    return out;
  }

  /**
   * Invariants 1 and 2 over every datagram the servers saw, of the streams and the new-flow probes. Returns packets
   * judged, datagrams of opted-in pods lost (allowed), datagrams of not-opted-in pods lost unexplained.
   */
  private static long[] judge(Cluster c, Workload w, Nemesis nemesis, Duration interval, List<Violation> violations) {
    long judged = 0;
    long lostIn = 0;
    long lostOut = 0;
    List<Nemesis.Injected> faults = nemesis.injected();
    for (Workload.Sender s : w.senders()) {
      Cluster.Node node = c.node(s.pod().node());
      String uplinkIp = node.uplink(1).nodeIp(IpFamily.V4);
      String uplinkWhere = node.uplink(1).where();
      List<Traffic.Arrival> arrivals = w.stream(s.pod().name()).arrivals();
      judged += arrivals.size();
      for (Traffic.Arrival a : arrivals) {
        judgeOne(s, a.source(), a.where(), uplinkIp, uplinkWhere, "stream seq " + a.seq(), faultAt(faults, a.sentNanos()),
            violations);
      }
      long lost = lost(arrivals, s.pod().node(), faults, interval, s.lbIp().isPresent());
      if (s.lbIp().isPresent()) {
        lostIn += lost;
      } else {
        lostOut += lost;
        long sent = arrivals.isEmpty() ? 0 : arrivals.get(arrivals.size() - 1).seq() + 1;
        if (lost > Math.max(5, UNEXPLAINED_LOSS_TOLERANCE * sent)) {
          violations.add(new Violation(2, s.pod().name() + " (opted into nothing) lost " + lost + " of " + sent
              + " datagrams outside its node's power-offs"));
        }
      }
    }
    for (Map.Entry<String, Traffic.Probe> e : w.probes()) {
      Workload.Sender s = w.senders().stream().filter(x -> x.pod().name().equals(e.getKey())).findFirst().orElseThrow();
      Cluster.Node node = c.node(s.pod().node());
      for (Traffic.Seen seen : e.getValue().seen()) {
        judged++;
        judgeOne(s, seen.source(), seen.where(), node.uplink(1).nodeIp(IpFamily.V4), node.uplink(1).where(),
            "new-flow probe", "", violations);
      }
    }
    return new long[] {judged, lostIn, lostOut};
  }

  private static void judgeOne(Workload.Sender s, String source, String where, String uplinkIp, String uplinkWhere,
      String what, String during, List<Violation> violations) {
    if (s.lbIp().isPresent()) {
      if (!source.equals(s.lbIp().get())) {
        violations.add(new Violation(1, s.pod().name() + " " + what + " left with " + source + " at " + where
            + " (its LB IP " + s.lbIp().get() + ")" + during));
      }
    } else if (!source.equals(uplinkIp) || !where.equals(uplinkWhere)) {
      violations.add(new Violation(2, s.pod().name() + " (opted into nothing) " + what + " left with " + source + " at "
          + where + " (expected " + uplinkIp + " at " + uplinkWhere + ")" + during));
    }
  }

  private static String faultAt(List<Nemesis.Injected> faults, long t) {
    for (Nemesis.Injected f : faults) {
      if (f.covers(t, Duration.ofSeconds(5).toNanos())) {
        return " near " + f.fault() + " " + f.target();
      }
    }
    return "";
  }

  /**
   * Datagrams missing between the first and the last seen, each placed in time between the arrivals around it; for a
   * not-opted-in pod those within 3 s of its own node's power-off are explained and not counted.
   */
  private static long lost(List<Traffic.Arrival> arrivals, String node, List<Nemesis.Injected> faults,
      Duration interval, boolean countAll) {
    List<Traffic.Arrival> sorted = new ArrayList<>(arrivals);
    sorted.sort(java.util.Comparator.comparingLong(Traffic.Arrival::seq));
    long lost = 0;
    for (int i = 1; i < sorted.size(); i++) {
      Traffic.Arrival prev = sorted.get(i - 1);
      Traffic.Arrival next = sorted.get(i);
      for (long q = prev.seq() + 1; q < next.seq(); q++) {
        long t = prev.sentNanos() + (q - prev.seq()) * interval.toNanos();
        boolean explained = !countAll && faults.stream().anyMatch(f -> (f.fault() == Fault.POWER_OFF
            || f.fault() == Fault.NODE_REBOOT)
            && f.target().startsWith(node + " ") && f.covers(t, Duration.ofSeconds(3).toNanos()));
        if (!explained) {
          lost++;
        }
      }
    }
    return lost;
  }

  /** Invariant 4: every EgressService deleted, nothing of ours left on any node within 60 s. */
  private static void nothingLeft(Cluster c, Workload w, List<Violation> violations, Evidence evidence,
      Consumer<String> log) {
    for (String name : w.allNames()) {
      c.api().deleteEgressService(name);
    }
    long limit = System.nanoTime() + Duration.ofSeconds(60).toNanos();
    Map<String, List<String>> left = new java.util.TreeMap<>();
    while (System.nanoTime() < limit) {
      left.clear();
      for (Cluster.Node n : c.nodes()) {
        List<String> l = JudgedKernelState.leftovers(n.netns());
        if (!l.isEmpty()) {
          left.put(n.name(), l);
        }
      }
      if (left.isEmpty()) {
        log.accept("every EgressService deleted: nothing of ours left on any node");
        return;
      }
      Nemesis.pause(200);
    }
    violations.add(new Violation(4, "60 s after deleting every EgressService: " + left));
    evidence.snapshot("60 s after deleting every EgressService: " + left);
  }

  /** Invariant 5's second half: no thread of an agent died (the JVM prints "Exception in thread" for each). */
  private static void threadsAlive(Cluster c, List<Violation> violations) {
    for (Cluster.Node n : c.nodes()) {
      try {
        for (String line : Files.readAllLines(n.agent().log())) {
          if (line.contains("Exception in thread")) {
            violations.add(new Violation(5, n.name() + " log: " + line));
          }
        }
      } catch (IOException e) {
        violations.add(new Violation(5, n.name() + ": no log: " + e.getMessage()));
      }
    }
  }

  /** Per node: the agent's pid, CPU ticks (user + system, 1/100 s) and RSS (KiB), from /proc. */
  private static Map<String, long[]> resources(Cluster c) {
    Map<String, long[]> out = new java.util.HashMap<>();
    for (Cluster.Node n : c.nodes()) {
      long pid = n.agent().pid().orElse(0L);
      long cpu = 0;
      long rss = 0;
      try {
        String stat = Files.readString(Path.of("/proc/" + pid + "/stat"));
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        cpu = Long.parseLong(f[11]) + Long.parseLong(f[12]);
        for (String line : Files.readAllLines(Path.of("/proc/" + pid + "/status"))) {
          if (line.startsWith("VmRSS:")) {
            rss = Long.parseLong(line.replaceAll("[^0-9]", ""));
          }
        }
      } catch (IOException | RuntimeException e) {
        // the agent is not running at this instant: zeros
      }
      out.put(n.name(), new long[] {pid, cpu, rss});
    }
    return out;
  }

  /** Invariant 5: a process that is not running and was not taken down on purpose. */
  private static final class ExitWatch implements AutoCloseable {
    private final Thread thread;
    private volatile boolean closed;

    ExitWatch(Cluster c, Allocators allocators, Nemesis nemesis, List<Violation> violations, Evidence evidence) {
      thread = new Thread(() -> {
        Set<String> reported = new java.util.HashSet<>();
        while (!closed) {
          for (Cluster.Node n : c.nodes()) {
            Optional<Long> pid = n.agent().pid();
            if (pid.isEmpty() && !nemesis.expectedDown(n.name()) && !closed && reported.add(n.name())) {
              violations.add(new Violation(5, "the agent of " + n.name() + " exited unasked; its log:\n"
                  + n.agent().tail(20)));
              evidence.snapshot("the agent of " + n.name() + " exited unasked");
            }
          }
          for (int i = 0; i < allocators.count(); i++) {
            String name = Allocators.name(i);
            if (!allocators.running(i) && !nemesis.expectedDown(name) && !closed && reported.add(name)) {
              violations.add(new Violation(5, name + " exited unasked (log " + c.dir().resolve(name + ".log") + ")"));
              evidence.snapshot(name + " exited unasked");
            }
          }
          try {
            Thread.sleep(250);
          } catch (InterruptedException e) {
            return;
          }
        }
      }, "chaos-exit-watch");
      thread.setDaemon(true);
      thread.start();
    }

    @Override
    public void close() {
      closed = true;
      thread.interrupt();
    }
  }
}

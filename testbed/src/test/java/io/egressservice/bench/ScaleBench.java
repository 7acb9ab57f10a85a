package io.egressservice.bench;

import io.egressservice.ip.IpPrefix;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Benchmark, not a test (bench/scale.sh, never mvn verify): the scale figures (idle, change, start), every row from
 * the real agent process (the node jar, the DaemonSet's JAVA_TOOL_OPTIONS and environment, the image's AppCDS
 * archive, allocator included, as {@link AgentLatencyBench}'s {@code latency-process} runs it) inside a memory
 * cgroup limited to the DaemonSet's memory limit, against the mock API server in a child JVM. Each scenario has
 * a fresh API server, network namespace, cgroup and agent.
 *
 * <ul>
 *   <li>{@code change N [mark]}: N LoadBalancerIP services x 5 endpoints; after convergence, idle and the end of
 *       the start's Events (its RSS; the thread count sampled from launch to here), warm-up, then, 2 s after a
 *       periodic resync and checked free of resyncs, a background window and K isolated updates (one endpoint
 *       address replaced; the next only after the new rule reached the kernel and 300 ms more): the process's CPU
 *       (/proc/PID/stat, per thread from /proc/PID/task) and heap bytes allocated ({@code jvm_allocated_bytes_total}
 *       on its /metrics) per change; then the idle CPU between resyncs and over a resync period.
 *   <li>{@code latency N}: {@code latency-process} with N services, 300 updates 30 ms apart: paced p99.
 *   <li>{@code cold N [endpoints=10]}: seconds from the process start to /readyz 200 and to every expected rule in
 *       the kernel, the cgroup's peak memory and VmHWM, and whether it ran out of memory or exited.
 *   <li>{@code idle N [others=0]}: RSS once converged and idle, with {@code others} Services and EndpointSlices
 *       that did not opt in beside the N that did.
 *   <li>{@code nftfloor N [mark]}: no agent: {@link NftElementFloor}, libnftables' and the kernel's CPU for one
 *       change's element transaction beside N services' elements.
 *   <li>{@code all} (default): every row of the issue in one run, and a summary table.
 * </ul>
 */
public final class ScaleBench {
  static final Duration CONVERGE_LIMIT = Duration.ofSeconds(Long.getLong("bench.convergeLimitSeconds", 300));
  static final Duration COLD_START_LIMIT = Duration.ofSeconds(Long.getLong("bench.coldStartLimitSeconds", 300));
  /** After an OutOfMemoryError in the log, give up waiting once the kernel's rule count stood still this long. */
  static final Duration OOM_STALL = Duration.ofSeconds(30);
  static final int CHANGES = Integer.getInteger("bench.changes", 50);
  static final int WARMUP = Integer.getInteger("bench.warmupChanges", 20);
  /** The background CPU is measured over this long right before the changes. */
  static final Duration IDLE_WINDOW = Duration.ofSeconds(Long.getLong("bench.backgroundSeconds", 10));
  static final Duration CHANGE_GAP = Duration.ofMillis(300);
  static final Duration CHANGE_TIMEOUT = Duration.ofSeconds(10);

  /** One line of the summary. */
  record Row(String figure, String value, String target, String verdict, String machine) {}

  private final List<Row> rows = new ArrayList<>();
  private final long memoryLimit;
  private final String jvmOptions;
  /** What the shutdown hook stops and removes when the bench is ended from outside (timeout's SIGTERM). */
  private volatile AgentLatencyBench current;
  private volatile MemoryCgroup currentCgroup;

  private ScaleBench() throws IOException {
    memoryLimit = daemonSetMemoryLimitBytes();
    jvmOptions = new AgentLatencyBench().agentJvmOptions();
  }

  public static void main(String[] args) throws Exception {
    AgentLatencyBench.MOCK_LOG.setLevel(java.util.logging.Level.WARNING);
    ((ch.qos.logback.classic.Logger) org.slf4j.LoggerFactory.getLogger("io.egressservice"))
        .setLevel(ch.qos.logback.classic.Level.WARN);
    String mode = args.length > 0 ? args[0] : "all";
    if (mode.equals("nftfloor")) { // no agent: nor the AppCDS dump of the constructor (a running agent maps it)
      NftElementFloor.measure(AgentLatencyBench.intArg(args, 1, 5000), args.length > 2 && args[2].equals("mark"),
          CHANGES);
      System.exit(0);
    }
    ScaleBench bench = new ScaleBench();
    Runtime.getRuntime().addShutdownHook(new Thread(bench::cleanUp, "scale-bench-cleanup"));
    System.out.printf(Locale.ROOT, "scale bench: java %s, kernel %s, %d CPUs; the agent in a memory cgroup of %d MiB"
            + " (resources.limits.memory of deploy/daemonset.yaml unless -Dbench.memoryLimitMiB); JAVA_TOOL_OPTIONS=\"%s\"%n",
        System.getProperty("java.version"), System.getProperty("os.version"),
        Runtime.getRuntime().availableProcessors(), bench.memoryLimit >> 20, bench.jvmOptions);
    System.out.println("CPU time and bytes allocated are the agent's own whatever else runs; wall times (p99, cold"
        + " start) grow with the machine's load and steal, printed with each figure.");
    switch (mode) {
      case "all" -> bench.all();
      case "change" -> bench.change(AgentLatencyBench.intArg(args, 1, 1000),
          args.length > 2 && args[2].equals("mark"));
      case "latency" -> bench.latency(AgentLatencyBench.intArg(args, 1, 1000));
      case "cold" -> bench.cold(AgentLatencyBench.intArg(args, 1, 1000), AgentLatencyBench.intArg(args, 2, 10),
          args.length > 3 && args[3].equals("mark"));
      case "floor" -> bench.kernelFloor(AgentLatencyBench.intArg(args, 1, 55_000));
      case "idle" -> bench.idle(AgentLatencyBench.intArg(args, 1, 50), AgentLatencyBench.intArg(args, 2, 0));
      default -> throw new IllegalArgumentException("mode is all, change, latency, cold, floor, nftfloor or idle, not " + mode);
    }
    bench.printSummary();
    System.exit(0);
  }

  void all() throws Exception {
    ChangeCost c100 = change(100);
    ChangeCost c1000 = change(1000);
    ChangeCost c5000 = change(5000);
    String machine = "(CPU and bytes: load-independent)";
    if (c100 != null && c5000 != null) {
      double cpu = c5000.netCpuMs() / c100.netCpuMs();
      double gross = c5000.cpuMs() / c100.cpuMs();
      double bytes = c5000.netBytes() / c100.netBytes();
      double grossBytes = c5000.bytes() / c100.bytes();
      row("CPU per change net of the background, 5,000 / 100 services", String.format(Locale.ROOT,
          "%.2fx (gross %.2fx)", cpu, gross), "<= 2x", cpu <= 2, machine);
      row("bytes allocated per change net of the background, 5,000 / 100 services", String.format(Locale.ROOT,
          "%.2fx (gross %.2fx)", bytes, grossBytes), "<= 2x", bytes <= 2, machine);
    } else {
      rows.add(new Row("CPU and bytes per change, 5,000 / 100 services", "n/a", "<= 2x",
          "NOT MET (a size not reached)", machine));
    }
    if (c1000 != null && c1000.idleRssKib() > 0) {
      row("RSS at idle, 1,000 opted-in services", mib(c1000.idleRssKib()), "<= 128 MiB",
          c1000.idleRssKib() <= 128 * 1024, c1000.idleMachine());
    }
    latency(1000);
    cold(1000, 10, false);
    cold(5000, 10, false);
    kernelFloor(55_000);
    cold(5000, 10, true);
    Idle alone = idle(50, 0);
    Idle beside = idle(50, 10_000);
    if (alone != null && beside != null) {
      double ratio = (double) beside.rssKib() / alone.rssKib();
      row("RSS, 50 opted-in + 10,000 not / 50 alone", String.format(Locale.ROOT, "%.3f (%s / %s)", ratio,
          mib(beside.rssKib()), mib(alone.rssKib())), "<= 1.10", ratio <= 1.10, beside.machine());
    }
  }

  // ------------------------------------------------------------------------------------ scenarios

  private static final String EVENTS = "egress_service_agent_events_written_total";
  /** How long the Events counter must stand still to call the start's Events done, and how long to wait for it. */
  static final Duration EVENTS_QUIET = Duration.ofSeconds(Long.getLong("bench.eventsQuietSeconds", 20));
  static final Duration EVENTS_QUIET_LIMIT = Duration.ofSeconds(Long.getLong("bench.eventsQuietLimitSeconds", 720));
  /** The idle CPU window between two resyncs (0: no idle CPU phase after the changes). */
  static final Duration IDLE_CPU_WINDOW = Duration.ofSeconds(Long.getLong("bench.idleCpuSeconds", 30));

  /**
   * Waits (bounded by {@link #EVENTS_QUIET_LIMIT}) until the agent's Events counter has not moved for
   * {@link #EVENTS_QUIET}, polling its filtered /metrics once a second; prints how long it waited.
   */
  static void awaitEventsQuiet(AgentLatencyBench b, long launched) throws InterruptedException {
    long start = System.nanoTime();
    long deadline = start + EVENTS_QUIET_LIMIT.toNanos();
    double last = b.processMetricLines(EVENTS);
    long lastMove = start;
    while (System.nanoTime() - lastMove < EVENTS_QUIET.toNanos() && System.nanoTime() < deadline) {
      Thread.sleep(1000);
      double now = b.processMetricLines(EVENTS);
      if (now != last) {
        last = now;
        lastMove = System.nanoTime();
      }
    }
    boolean quiet = System.nanoTime() - lastMove >= EVENTS_QUIET.toNanos();
    System.out.printf(Locale.ROOT, "  Events: %.0f written; %s after waiting %.1f s (%.1f s after launch; last one"
            + " %.1f s after launch)%n", last, quiet ? "quiet for " + EVENTS_QUIET.toSeconds() + " s"
            : "WARNING: still moving at the limit of " + EVENTS_QUIET_LIMIT.toSeconds() + " s",
        (System.nanoTime() - start) / 1e9, (System.nanoTime() - launched) / 1e9, (lastMove - launched) / 1e9);
  }

  /**
   * The idle agent's CPU (no change, no Events): over {@link #IDLE_CPU_WINDOW} starting 2 s after a periodic resync
   * (asserted free of resyncs by their count), then over the whole period from that resync's end to the next's,
   * one resync included; per thread for both.
   */
  void idleCpu(AgentLatencyBench b, Path stat) throws InterruptedException {
    System.out.printf(Locale.ROOT, "  idle CPU: %d s between resyncs, then the rest of that resync period%n",
        IDLE_CPU_WINDOW.toSeconds());
    double resyncs0 = awaitResync(b, Duration.ofSeconds(75));
    double events0 = b.processMetricLines(EVENTS);
    Machine m = Machine.now();
    long ticks0 = AgentLatencyBench.cpuTicks(stat);
    Map<String, long[]> threads0 = AgentLatencyBench.threadTicks(stat.getParent());
    long t0 = System.nanoTime();
    Thread.sleep(IDLE_CPU_WINDOW.toMillis());
    long ticks1 = AgentLatencyBench.cpuTicks(stat);
    Map<String, long[]> threads1 = AgentLatencyBench.threadTicks(stat.getParent());
    double s1 = (System.nanoTime() - t0) / 1e9;
    double resyncsIn = b.processMetricLines(RESYNCS) - resyncs0;
    double eventsIn = b.processMetricLines(EVENTS) - events0;
    String machine1 = m.since();
    System.out.printf(Locale.ROOT, "  ROW idle-cpu between resyncs: %.1f ms of CPU per s (%d ticks in %.1f s); %s;"
            + " %.0f Events in it; %s; %s%n", (ticks1 - ticks0) * 10.0 / s1, ticks1 - ticks0, s1,
        resyncsIn == 0 ? "no resync in it" : "WARNING: " + (long) resyncsIn + " resync(s) in it", eventsIn, machine1,
        loadavg());
    AgentLatencyBench.printThreadCpu(threads0, threads1, ticks1 - ticks0, Math.max(1, Math.round(s1)), "s");
    double resyncs1 = awaitResync(b, Duration.ofSeconds(75));
    long ticks2 = AgentLatencyBench.cpuTicks(stat);
    Map<String, long[]> threads2 = AgentLatencyBench.threadTicks(stat.getParent());
    double s2 = (System.nanoTime() - t0) / 1e9;
    System.out.printf(Locale.ROOT, "  ROW idle-cpu over a resync period: %.1f ms of CPU per s (%d ticks in %.1f s, %.0f"
            + " resync(s)); %.0f Events in it; %s; %s%n", (ticks2 - ticks0) * 10.0 / s2, ticks2 - ticks0, s2,
        resyncs1 - resyncs0, b.processMetricLines(EVENTS) - events0, m.since(), loadavg());
    AgentLatencyBench.printThreadCpu(threads0, threads2, ticks2 - ticks0, Math.max(1, Math.round(s2)), "s");
  }

  /** /proc/loadavg as it reads now. */
  static String loadavg() {
    try {
      return "loadavg " + Files.readString(Path.of("/proc/loadavg")).trim();
    } catch (IOException e) {
      return "loadavg n/a";
    }
  }

  private static final String RESYNCS = "egress_service_agent_reconcile_duration_seconds_count{trigger=\"resync\"";

  /** Waits (bounded) for the agent's next periodic resync to end; returns the resync count 2 s after it. */
  static double awaitResync(AgentLatencyBench b, Duration limit) throws InterruptedException {
    double before = b.processMetricLines(RESYNCS);
    long deadline = System.nanoTime() + limit.toNanos();
    while (b.processMetricLines(RESYNCS) == before && System.nanoTime() < deadline) {
      Thread.sleep(200);
    }
    Thread.sleep(2000);
    return b.processMetricLines(RESYNCS);
  }

  record ChangeCost(double cpuMs, double netCpuMs, double bytes, double netBytes, long idleRssKib,
      String idleMachine) {}

  /** CPU and bytes per isolated endpoint change at {@code services} x 5 endpoints; null when not converged. */
  ChangeCost change(int services) throws Exception {
    return change(services, false);
  }

  /** As {@link #change(int)}, in mark mode when {@code markMode} (each change then awaited as its first nft commit). */
  ChangeCost change(int services, boolean markMode) throws Exception {
    System.out.printf(Locale.ROOT, "%n== CPU and bytes per endpoint change, %s: %d services x 5 endpoints, %d isolated"
        + " changes after %d warm-up%n", markMode ? "mark mode" : "source mode", services, CHANGES, WARMUP);
    AgentLatencyBench b = setUp(services, 5, 0);
    b.markMode = markMode;
    try {
      Machine m0 = Machine.now();
      long t0 = System.nanoTime();
      b.startAgentProcess(url, jvmOptions);
      long pid = b.agentProcess().orElseThrow().pid();
      ThreadCountSampler threadCount = new ThreadCountSampler(pid, t0);
      Start start = awaitProgrammed(b, services, t0, CONVERGE_LIMIT);
      System.out.println("  start: " + start + "; " + m0.since());
      if (!start.programmed()) {
        threadCount.close();
        rows.add(new Row("CPU/bytes per change, " + services + " services" + (markMode ? ", mark mode" : ""), "not converged: " + start.end(),
            "converge", "NOT MET", m0.since()));
        return null;
      }
      Path stat = Path.of("/proc", Long.toString(pid), "stat");
      double idleAfter = AgentLatencyBench.awaitIdle(stat, Duration.ofSeconds(180));
      Thread.sleep(5000);
      System.out.printf(Locale.ROOT, "  idle %.1f s after convergence, then 5 s: RSS %s (VmHWM %s), %d rules held; %s%n",
          idleAfter, mib(AgentLatencyBench.statusKib(pid, "VmRSS")), mib(AgentLatencyBench.statusKib(pid, "VmHWM")),
          b.ownedRules(), m0.since());
      // Clear of the start's Events (10 a second: 500 s at 5,000 services) before anything is measured: they are
      // the start's cost, not the change's nor the idle agent's.
      awaitEventsQuiet(b, t0);
      long rss = AgentLatencyBench.statusKib(pid, "VmRSS");
      Machine idleMachine = Machine.now();
      System.out.printf(Locale.ROOT, "  idle RSS clear of Events: %s (VmHWM %s); threads from launch to here: %s; %s%n",
          mib(rss), mib(AgentLatencyBench.statusKib(pid, "VmHWM")), threadCount.stop(), m0.since());
      List<int[]> slots = slots(services, 5);
      int[] cursor = {0};
      isolatedChanges(b, WARMUP, slots, cursor);
      // Both windows fall between two periodic resyncs (--resync 60s: a full reconcile, O(services), the safety net
      // whatever changes): they start 2 s after one.
      double resyncs0 = awaitResync(b, Duration.ofSeconds(75));
      System.out.printf(Locale.ROOT, "  window starts %s: %d s of background, then the changes (a profiler can attach"
          + " now)%n", java.time.LocalTime.now(java.time.ZoneOffset.UTC).withNano(0), IDLE_WINDOW.toSeconds());
      // The background right before the changes, as long as they take: what the process spends whatever changes
      // (the rate-limited Events of its start, 10 a second, which last 500 s at 5,000 services).
      double events0 = b.processMetricLines(EVENTS);
      double idleBytes0 = b.processMetric("jvm_allocated_bytes_total");
      long baseline = AgentLatencyBench.cpuTicks(stat);
      long idleStart = System.nanoTime();
      Thread.sleep(IDLE_WINDOW.toMillis());
      long idleTicks = AgentLatencyBench.cpuTicks(stat) - baseline;
      double idleS = (System.nanoTime() - idleStart) / 1e9;
      double idleBytes = b.processMetric("jvm_allocated_bytes_total") - idleBytes0;
      double idleEvents = b.processMetricLines(EVENTS) - events0;
      Machine m = Machine.now();
      long ticks0 = AgentLatencyBench.cpuTicks(stat);
      Map<String, long[]> threads0 = AgentLatencyBench.threadTicks(stat.getParent());
      double bytes0 = b.processMetric("jvm_allocated_bytes_total");
      long reconciles0 = b.processReconciles();
      long wall0 = System.nanoTime();
      Changes done = isolatedChanges(b, CHANGES, slots, cursor);
      double wallS = (System.nanoTime() - wall0) / 1e9;
      long ticks = AgentLatencyBench.cpuTicks(stat) - ticks0;
      Map<String, long[]> threads1 = AgentLatencyBench.threadTicks(stat.getParent());
      double bytes = b.processMetric("jvm_allocated_bytes_total") - bytes0;
      long reconciles = b.processReconciles() - reconciles0;
      double resyncsDuring = b.processMetricLines(RESYNCS) - resyncs0;
      String machine = m.since();
      double cpuMs = ticks * 10.0 / CHANGES;
      double backgroundMsPerS = idleTicks * 10.0 / idleS;
      double netCpuMs = Math.max(0, (ticks * 10.0 - backgroundMsPerS * wallS) / CHANGES);
      double bytesPer = bytes / CHANGES;
      double netBytesPer = Math.max(0, (bytes - idleBytes / idleS * wallS) / CHANGES);
      System.out.printf(Locale.ROOT, "  %d changes in %.1f s, %d timeouts (> %d s), %d reconciles (%.0f of them resyncs);"
              + " latency p50 %.0f ms, max %.0f ms%n", CHANGES, wallS, done.timeouts(), CHANGE_TIMEOUT.toSeconds(),
          reconciles, resyncsDuring, done.percentile(0.5), done.percentile(1.0));
      System.out.printf(Locale.ROOT, "  agent CPU per change: %.1f ms (%.2f s for %d); heap allocated per change: %.2f"
              + " MiB; background %.1f ms/s (%d ticks in the %.0f s before, %.0f Events written meanwhile), i.e."
              + " %.1f ms of each change's figure; net of it: %.1f ms and %.2f MiB per change (background allocation"
              + " %.2f MiB/s)%n",
          cpuMs, ticks / 100.0, CHANGES, bytesPer / 1048576.0, backgroundMsPerS, idleTicks, idleS, idleEvents,
          backgroundMsPerS * wallS / CHANGES, netCpuMs, netBytesPer / 1048576.0, idleBytes / idleS / 1048576.0);
      AgentLatencyBench.printThreadCpu(threads0, threads1, ticks, CHANGES, "change");
      System.out.println("  machine during the changes: " + machine);
      double eventsAfter = b.processMetricLines(EVENTS);
      System.out.printf(Locale.ROOT, "  window (background and changes, %.1f s): %s; %.0f Events written in it%n",
          idleS + wallS, resyncsDuring == 0 ? "no resync (the resync count did not move)"
              : "WARNING: " + (long) resyncsDuring + " resync(s) in it, the figures include them", eventsAfter - events0);
      System.out.printf(Locale.ROOT, "  ROW change %d %s: gross %.1f ms, net %.1f ms, %.3f MiB gross, %.3f MiB net per"
              + " change; background %.1f ms/s; netns thread and reconcile thread above; %s%n", services,
          markMode ? "mark" : "source", cpuMs, netCpuMs, bytesPer / 1048576.0, netBytesPer / 1048576.0,
          backgroundMsPerS, loadavg());
      if (IDLE_CPU_WINDOW.toSeconds() > 0) {
        idleCpu(b, stat);
      }
      rows.add(new Row("CPU per change, " + services + " services" + (markMode ? ", mark mode" : ""), String.format(Locale.ROOT,
          "%.1f ms (%.1f net of the background)", cpuMs, netCpuMs),
          "flat: 5,000 / 100 <= 2x", done.timeouts() == 0 ? "(ratio below)" : "NOT MET (" + done.timeouts()
              + " timeouts)", machine));
      rows.add(new Row("bytes allocated per change, " + services + " services" + (markMode ? ", mark mode" : ""),
          String.format(Locale.ROOT, "%.2f MiB (%.2f net of the background)", bytesPer / 1048576.0,
              netBytesPer / 1048576.0), "flat: 5,000 / 100 <= 2x", "(ratio below)",
          machine));
      return done.timeouts() == 0 ? new ChangeCost(cpuMs, netCpuMs, bytesPer, netBytesPer, rss, idleMachine.since(m0)) : null;
    } finally {
      tearDown(b);
    }
  }

  void latency(int services) throws Exception {
    System.out.printf(Locale.ROOT, "%n== paced event-to-kernel latency: latency-process %d services, 300 updates 30 ms"
        + " apart (33/s), 200 warm-up%n", services);
    MemoryCgroup cgroup = MemoryCgroup.create(memoryLimit);
    AgentLatencyBench b = new AgentLatencyBench();
    b.netnsPrefix = "esa-scale-";
    b.agentLauncher = cgroup.launcher();
    current = b;
    currentCgroup = cgroup;
    Machine m = Machine.now();
    try {
      double p99 = b.latency(services, 300, 30, 0, 200, true);
      row("paced p99 event-to-kernel, " + services + " services, 33 updates/s",
          Double.isNaN(p99) ? "timeouts" : String.format(Locale.ROOT, "%.1f ms", p99), "<= 100 ms (quiet machine)",
          p99 <= 100, m.since());
    } catch (IllegalStateException e) {
      rows.add(new Row("paced p99, " + services + " services", "not reached: " + e.getMessage(), "<= 100 ms",
          "NOT MET", m.since()));
    } finally {
      b.close();
      cgroup.close();
      current = null;
      currentCgroup = null;
    }
  }

  /**
   * What the kernel alone takes to add {@code rules} source rules at one priority (RtNetlink in batches, without
   * NLM_F_EXCL, no agent, a fresh namespace): the floor of a source-mode cold start. The fib rule list is linked
   * and an add walks every rule of its priority and below, so the sum grows faster than the count.
   */
  void kernelFloor(int rules) {
    System.out.printf(Locale.ROOT, "%n== kernel floor: %d ip rules at one priority, added by RtNetlink alone%n", rules);
    Machine m = Machine.now();
    double ms = NetlinkRulesBench.timeOurs(rules, false);
    String machine = m.since();
    System.out.printf(Locale.ROOT, "  %d rules in %.1f s; %s%n", rules, ms / 1000, machine);
    rows.add(new Row("kernel alone: " + rules + " source rules at one priority (no agent)",
        String.format(Locale.ROOT, "%.1f s", ms / 1000), "(floor of a source-mode cold start)", "", machine));
  }

  void cold(int services, int endpoints, boolean markMode) throws Exception {
    String mode = markMode ? "mark mode" : "source mode";
    System.out.printf(Locale.ROOT, "%n== cold start, %s: %d services x %d endpoints (%d %s), limit %d s%n", mode,
        services, endpoints, services * (endpoints + 1), markMode ? "mark map elements" : "rules",
        COLD_START_LIMIT.toSeconds());
    AgentLatencyBench b = setUp(services, endpoints, 0);
    b.markMode = markMode;
    try {
      Machine m = Machine.now();
      long t0 = System.nanoTime();
      b.startAgentProcess(url, jvmOptions);
      Start start = awaitProgrammed(b, services, t0, COLD_START_LIMIT);
      String machine = m.since();
      Optional<Process> p = b.agentProcess();
      String hwm = p.isPresent() && p.get().isAlive() ? mib(AgentLatencyBench.statusKib(p.get().pid(), "VmHWM")) : "n/a";
      String peak = currentCgroup.peakBytes().map(v -> mib(v >> 10)).orElse("n/a");
      String oom = oomSummary(b);
      System.out.printf(Locale.ROOT, "  %s; cgroup peak %s, VmHWM %s; %s; %s%n", start, peak, hwm, oom, machine);
      boolean fits = !oom.startsWith("OOM") && start.end().equals("programmed");
      String value = String.format(Locale.ROOT, "ready %s, programmed %s; peak %s (VmHWM %s); %s",
          seconds(start.readySeconds()), seconds(start.programmedSeconds()), peak, hwm, oom);
      if (services >= 5000) {
        row("cold start, " + mode + ", " + services + " x " + endpoints, value, "<= 30 s, within " + (memoryLimit >> 20) + " MiB",
            fits && start.programmedSeconds() <= 30, machine);
      } else {
        row("cold start, " + mode + ", " + services + " x " + endpoints, value, "within " + (memoryLimit >> 20) + " MiB", fits,
            machine);
      }
    } finally {
      tearDown(b);
    }
  }

  record Idle(long rssKib, String machine) {}

  Idle idle(int services, int others) throws Exception {
    System.out.printf(Locale.ROOT, "%n== RSS at idle: %d opted-in services x 5 endpoints, %d Services and EndpointSlices"
        + " that did not opt in%n", services, others);
    AgentLatencyBench b = setUp(services, 5, others);
    try {
      Machine m = Machine.now();
      long t0 = System.nanoTime();
      b.startAgentProcess(url, jvmOptions);
      Start start = awaitProgrammed(b, services, t0, CONVERGE_LIMIT);
      System.out.println("  start: " + start);
      if (!start.programmed()) {
        rows.add(new Row("RSS, " + services + " + " + others + " not opted in", "not converged: " + start.end(),
            "converge", "NOT MET", m.since()));
        return null;
      }
      long pid = b.agentProcess().orElseThrow().pid();
      double idle = AgentLatencyBench.awaitIdle(Path.of("/proc", Long.toString(pid), "stat"), Duration.ofSeconds(180));
      Thread.sleep(5000);
      System.out.printf(Locale.ROOT, "  idle %.1f s after convergence, then 5 s: RSS %s%n", idle,
          mib(AgentLatencyBench.statusKib(pid, "VmRSS")));
      awaitEventsQuiet(b, t0); // idle means after the start's Events too (10 a second, N/10 s)
      long rss = AgentLatencyBench.statusKib(pid, "VmRSS");
      String machine = m.since();
      System.out.printf(Locale.ROOT, "  ROW idle RSS %d services clear of Events: RSS %s (VmHWM %s), %d rules held; %s;"
          + " %s%n", services, mib(rss), mib(AgentLatencyBench.statusKib(pid, "VmHWM")), b.ownedRules(), machine,
          loadavg());
      rows.add(new Row("RSS at idle, " + services + " opted-in + " + others + " not", mib(rss), "(ratio below)", "",
          machine));
      return new Idle(rss, machine);
    } finally {
      tearDown(b);
    }
  }

  // ---------------------------------------------------------------------------------------- helpers

  private String url;

  /** A fresh API server (child JVM) with the objects, a network namespace with an observer, a cgroup. */
  AgentLatencyBench setUp(int services, int endpoints, int others) throws IOException {
    MemoryCgroup cgroup = MemoryCgroup.create(memoryLimit);
    currentCgroup = cgroup;
    AgentLatencyBench b = new AgentLatencyBench();
    current = b;
    b.endpointsPerService = endpoints;
    b.otherServices = others;
    b.netnsPrefix = "esa-scale-";
    b.agentLauncher = cgroup.launcher();
    long t = System.nanoTime();
    url = b.startServerProcess(services);
    System.out.printf(Locale.ROOT, "  API server child up with %d + %d services' objects in %.1f s; agent in %s%n",
        services, others, (System.nanoTime() - t) / 1e9, cgroup.describe());
    b.connect(url);
    b.newNamespaceAndObserver();
    b.watchRules();
    b.initEndpoints(services); // as the child created them
    return b;
  }

  void tearDown(AgentLatencyBench b) {
    b.close();
    if (currentCgroup != null) {
      currentCgroup.close();
    }
    current = null;
    currentCgroup = null;
  }

  /** The shutdown hook: SIGTERM of the bench (timeout) still stops the agent and removes its cgroup. */
  void cleanUp() {
    AgentLatencyBench b = current;
    if (b != null) {
      b.agentProcess().ifPresent(Process::destroyForcibly);
      b.agentProcess().ifPresent(p -> {
        try {
          p.waitFor(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
        }
      });
      b.close();
    }
    MemoryCgroup c = currentCgroup;
    if (c != null) {
      c.close();
    }
  }

  /** How a start ended: seconds to /readyz 200 and to every expected rule (NaN if not), and why it stopped. */
  record Start(double readySeconds, double programmedSeconds, int rules, int expected, String end, String cpu) {
    boolean programmed() {
      return end.equals("programmed");
    }

    @Override
    public String toString() {
      return String.format(Locale.ROOT, "ready (/readyz 200) %s, programmed %s (%d of %d rules): %s; %s",
          seconds(readySeconds), seconds(programmedSeconds), rules, expected, end, cpu);
    }
  }

  /**
   * Waits until the kernel holds every expected rule (and /readyz said 200), the process exits, it logged an
   * OutOfMemoryError and the rule count stood still for {@link #OOM_STALL}, or {@code limit} passes.
   */
  Start awaitProgrammed(AgentLatencyBench b, int services, long t0, Duration limit) throws InterruptedException {
    int expected = b.expectedRules(services);
    long deadline = t0 + limit.toNanos();
    double ready = Double.NaN;
    double programmed = Double.NaN;
    int rules = 0;
    int lastRules = -1;
    long lastGrowth = System.nanoTime();
    long nextDump = 0;
    while (true) {
      long now = System.nanoTime();
      Process p = b.agentProcess().orElseThrow();
      if (Double.isNaN(ready) && b.processHttpStatus("/readyz") == 200) {
        ready = (System.nanoTime() - t0) / 1e9;
      }
      if (now >= nextDump && Double.isNaN(programmed)) {
        rules = b.programmedSources();
        if (rules == expected) {
          programmed = (System.nanoTime() - t0) / 1e9;
        }
        if (rules != lastRules) {
          lastRules = rules;
          lastGrowth = now;
        }
        nextDump = now + TimeUnit.MILLISECONDS.toNanos(AgentLatencyBench.pollMillis(expected));
      }
      if (!Double.isNaN(programmed) && !Double.isNaN(ready)) {
        return start(b, ready, programmed, rules, expected, "programmed");
      }
      if (!p.isAlive()) {
        return start(b, ready, programmed, rules, expected, "the agent exited with " + p.exitValue());
      }
      if (now - lastGrowth > OOM_STALL.toNanos() && OOM_LOGGED.matcher(b.agentOutput()).find()) {
        return start(b, ready, programmed, rules, expected, "OutOfMemoryError logged, no progress for "
            + OOM_STALL.toSeconds() + " s");
      }
      if (now > deadline) {
        return start(b, ready, programmed, rules, expected, "limit of " + limit.toSeconds() + " s reached");
      }
      Thread.sleep(100);
    }
  }

  /**
   * A Start, with the CPU the agent and the API server child used so far: a start that waits on a starved API
   * server is not one the agent made slow.
   */
  static Start start(AgentLatencyBench b, double ready, double programmed, int rules, int expected, String end) {
    return new Start(ready, programmed, rules, expected, end, String.format(Locale.ROOT,
        "CPU so far: agent %s, API server child %s", cpuSeconds(b.agentProcess()), cpuSeconds(b.serverProcess())));
  }

  static String cpuSeconds(Optional<Process> p) {
    if (p.isEmpty() || !p.get().isAlive()) {
      return "n/a";
    }
    try {
      return String.format(Locale.ROOT, "%.1f s",
          AgentLatencyBench.cpuTicks(Path.of("/proc", Long.toString(p.get().pid()), "stat")) / 100.0);
    } catch (IllegalStateException e) {
      return "n/a";
    }
  }

  /** An OutOfMemoryError, not the flag -XX:+ExitOnOutOfMemoryError of the "Picked up JAVA_TOOL_OPTIONS" line. */
  private static final Pattern OOM_LOGGED = Pattern.compile("(?<![A-Za-z])OutOfMemoryError");

  String oomSummary(AgentLatencyBench b) {
    String log = b.agentOutput();
    int errors = 0;
    for (Matcher m = OOM_LOGGED.matcher(log); m.find(); ) {
      errors++;
    }
    Optional<Long> kills = currentCgroup.oomKills();
    Optional<Process> p = b.agentProcess();
    String exited = p.isPresent() && !p.get().isAlive() ? ", exited " + p.get().exitValue() : "";
    if (errors == 0 && kills.orElse(0L) == 0) {
      return "no OOM" + exited;
    }
    return "OOM: " + errors + " OutOfMemoryError in the log, kernel oom_kill " + kills.map(String::valueOf)
        .orElse("n/a") + exited;
  }

  record Changes(int timeouts, double[] latenciesMs) {
    double percentile(double p) {
      if (latenciesMs.length == 0) {
        return Double.NaN;
      }
      int idx = (int) Math.ceil(p * latenciesMs.length) - 1;
      return latenciesMs[Math.max(0, Math.min(latenciesMs.length - 1, idx))];
    }
  }

  /** {@code n} changes, each after the previous one's rule reached the kernel and {@link #CHANGE_GAP} more. */
  Changes isolatedChanges(AgentLatencyBench b, int n, List<int[]> slots, int[] cursor) throws InterruptedException {
    int timeouts = 0;
    List<Double> latencies = new ArrayList<>();
    for (int u = 0; u < n; u++) {
      int[] slot = slots.get(cursor[0]++ % slots.size());
      long sent = System.nanoTime();
      long generation = b.markMode ? b.nftGeneration() : 0;
      IpPrefix source = b.replaceEndpoint(slot[0], slot[1]);
      Optional<Long> arrived = b.markMode ? b.awaitNftCommit(generation, CHANGE_TIMEOUT)
          : b.awaitArrival(source, CHANGE_TIMEOUT);
      if (arrived.isPresent()) {
        latencies.add((arrived.get() - sent) / 1e6);
      } else {
        timeouts++;
      }
      Thread.sleep(CHANGE_GAP.toMillis());
    }
    return new Changes(timeouts, latencies.stream().mapToDouble(Double::doubleValue).sorted().toArray());
  }

  /** (service, endpoint) slots in a seeded random order, so no address is replaced twice in a row. */
  static List<int[]> slots(int services, int endpoints) {
    List<int[]> slots = new ArrayList<>();
    for (int i = 0; i < services; i++) {
      for (int j = 0; j < endpoints; j++) {
        slots.add(new int[] {i, j});
      }
    }
    Collections.shuffle(slots, new Random(42));
    return slots;
  }

  void row(String figure, String value, String target, boolean met, String machine) {
    rows.add(new Row(figure, value, target, met ? "MET" : "NOT MET", machine));
    System.out.printf(Locale.ROOT, "  target: %s: %s -> %s%n", target, value, met ? "MET" : "NOT MET");
  }

  void printSummary() {
    System.out.println();
    System.out.println("| figure | value | target | verdict | machine during the figure |");
    System.out.println("|---|---|---|---|---|");
    for (Row r : rows) {
      System.out.printf("| %s | %s | %s | %s | %s |%n", r.figure(), r.value(), r.target(), r.verdict(), r.machine());
    }
  }

  static String mib(long kib) {
    return String.format(Locale.ROOT, "%.1f MiB", kib / 1024.0);
  }

  static String seconds(double s) {
    return Double.isNaN(s) ? "never" : String.format(Locale.ROOT, "%.1f s", s);
  }

  /** resources.limits.memory of the agent container in deploy/daemonset.yaml, in bytes. */
  static long daemonSetMemoryLimitBytes() throws IOException {
    String override = System.getProperty("bench.memoryLimitMiB", "");
    if (!override.isBlank()) {
      return Long.parseLong(override) << 20; // to find what a limit must be: the peak without this one's pressure
    }
    List<String> lines = Files.readAllLines(Path.of("deploy", "daemonset.yaml"));
    for (int i = 0; i + 1 < lines.size(); i++) {
      if (lines.get(i).trim().equals("limits:")) {
        for (int j = i + 1; j < lines.size() && j < i + 4; j++) {
          Matcher m = Pattern.compile("memory:\\s*\"?(\\d+)(Ki|Mi|Gi|K|M|G)?\"?").matcher(lines.get(j).trim());
          if (m.matches()) {
            long v = Long.parseLong(m.group(1));
            String unit = m.group(2) == null ? "" : m.group(2);
            return switch (unit) {
              case "Ki" -> v << 10;
              case "Mi" -> v << 20;
              case "Gi" -> v << 30;
              case "K" -> v * 1000;
              case "M" -> v * 1000_000;
              case "G" -> v * 1000_000_000;
              default -> v;
            };
          }
        }
      }
    }
    throw new IllegalStateException("no resources.limits.memory in deploy/daemonset.yaml");
  }

  /** The machine's 1-minute load average and CPU ticks at one moment, to say what a figure was taken under. */
  record Machine(double load1, long[] ticks) {
    static Machine now() {
      try {
        double load = Double.parseDouble(Files.readString(Path.of("/proc/loadavg")).trim().split("\\s+")[0]);
        return new Machine(load, AgentLatencyBench.machineTicks());
      } catch (IOException e) {
        throw new IllegalStateException(e);
      }
    }

    /** Load average now, and the machine's busy and stolen share since this moment (vmstat's "us+sy" and "st"). */
    String since() {
      Machine now = now();
      long total = now.ticks[0] - ticks[0];
      return String.format(Locale.ROOT, "load %.2f, %.0f %% busy, %.0f %% stolen", now.load1,
          total == 0 ? Double.NaN : 100.0 * (now.ticks[1] - ticks[1]) / total,
          total == 0 ? Double.NaN : 100.0 * (now.ticks[2] - ticks[2]) / total);
    }

    /** The same between an earlier moment and this one. */
    String since(Machine earlier) {
      long total = ticks[0] - earlier.ticks[0];
      return String.format(Locale.ROOT, "load %.2f, %.0f %% busy, %.0f %% stolen", load1,
          total == 0 ? Double.NaN : 100.0 * (ticks[1] - earlier.ticks[1]) / total,
          total == 0 ? Double.NaN : 100.0 * (ticks[2] - earlier.ticks[2]) / total);
    }
  }
}

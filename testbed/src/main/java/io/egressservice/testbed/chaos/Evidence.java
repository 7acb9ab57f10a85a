package io.egressservice.testbed.chaos;

import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.utils.Serialization;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.function.Consumer;
import java.util.function.Supplier;
import org.ovn.k8s.v1.EgressService;

/**
 * What explains a failed soak, kept in one directory: at each violation's moment (the first few), every node's
 * kernel state of ours, every agent's metrics and a thread dump of it (into its log), the API's objects and the fault
 * timeline so far; at the end, every process's log (agents,
 * allocator replicas), the whole timeline and the violations. Nothing is written for a run without violations.
 */
final class Evidence {
  /** Snapshots beyond this add little and cost seconds each: the first ones explain the run. */
  private static final int MAX_SNAPSHOTS = 5;
  private static final DateTimeFormatter STAMP = DateTimeFormatter.ofPattern("yyyyMMdd'T'HHmmss'Z'")
      .withZone(ZoneOffset.UTC);

  private final Path dir;
  private final Cluster cluster;
  private final Supplier<List<Nemesis.Injected>> timeline;
  private final Consumer<String> log;
  private int snapshots;

  Evidence(Path root, long seed, String mode, Cluster cluster, Supplier<List<Nemesis.Injected>> timeline,
      Consumer<String> log) {
    this.dir = root.toAbsolutePath().resolve("chaos-seed" + seed + "-" + mode + "-" + STAMP.format(Instant.now()));
    this.cluster = cluster;
    this.timeline = timeline;
    this.log = log;
  }

  /** Where the evidence goes (made at the first violation). */
  Path dir() {
    return dir;
  }

  /** The kernels, objects and timeline now, as a violation of {@code what} is found. */
  synchronized void snapshot(String what) {
    if (snapshots >= MAX_SNAPSHOTS) {
      return;
    }
    snapshots++;
    Path to = dir.resolve("snapshot-" + snapshots);
    try {
      Files.createDirectories(to);
      Files.writeString(to.resolve("violation.txt"), Instant.now() + " " + what + "\n");
      for (Cluster.Node n : cluster.nodes()) {
        Files.writeString(to.resolve("kernel-" + n.name() + ".txt"), JudgedKernelState.ownedState(n.netns()));
        agentState(n, to);
      }
      Files.writeString(to.resolve("timeline.txt"), timelineText());
      writeObjects(to);
      log.accept("violation: its evidence is kept in " + to);
    } catch (IOException | RuntimeException | LinkageError e) {
      log.accept("violation: evidence incomplete in " + to + ": " + e);
    }
  }

  /**
   * What the agent says of itself now: its /metrics page (watches up, contact age, queue) and a thread dump
   * (SIGQUIT: the JVM prints it to its output, the agent's log), to tell a stalled worker from a silent watch.
   */
  private static void agentState(Cluster.Node n, Path to) throws IOException {
    if (!hasAgent(n)) {
      return; // a cluster without agents
    }
    java.util.Optional<Long> agentPid = n.agent().pid(); // once: the agent may be going or coming back
    if (agentPid.isEmpty()) {
      Files.writeString(to.resolve("agent-" + n.name() + ".txt"), "not running\n");
      return;
    }
    String metrics;
    try {
      metrics = n.agent().metrics();
    } catch (IllegalStateException e) {
      metrics = "no answer on /metrics: " + e.getMessage() + "\n";
    }
    Files.writeString(to.resolve("agent-" + n.name() + ".txt"), metrics);
    // its TCP connections (to the API proxy among them): CLOSE-WAIT is a connection the peer closed that the agent
    // has not noticed
    try {
      Process ss = new ProcessBuilder("ss", "-tnpi").redirectErrorStream(true).start();
      String out = new String(ss.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
      ss.waitFor(5, java.util.concurrent.TimeUnit.SECONDS);
      String pid = "pid=" + agentPid.get() + ",";
      StringBuilder mine = new StringBuilder();
      String[] lines = out.split("\n");
      for (int i = 0; i < lines.length; i++) {
        if (lines[i].contains(pid)) {
          mine.append(lines[i]).append('\n');
          if (i + 1 < lines.length && lines[i + 1].startsWith("\t")) {
            mine.append(lines[i + 1]).append('\n');
          }
        }
      }
      Files.writeString(to.resolve("sockets-" + n.name() + ".txt"), mine.toString());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    try {
      new ProcessBuilder("kill", "-QUIT", Long.toString(agentPid.get())).start().waitFor(5,
          java.util.concurrent.TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  private static boolean hasAgent(Cluster.Node n) {
    try {
      n.agent();
      return true;
    } catch (IllegalStateException e) {
      return false;
    }
  }

  /** Every process's log, the timeline and the violations; returns the directory. */
  synchronized Path finish(List<Soak.Violation> violations, String table) {
    try {
      Files.createDirectories(dir);
      try (var files = Files.list(cluster.dir())) {
        for (Path p : files.filter(p -> p.toString().endsWith(".log")).toList()) {
          Files.copy(p, dir.resolve(p.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
        }
      }
      Files.writeString(dir.resolve("timeline.txt"), timelineText());
      StringBuilder v = new StringBuilder();
      violations.forEach(x -> v.append('(').append(x.invariant()).append(") ").append(x.detail()).append('\n'));
      Files.writeString(dir.resolve("violations.txt"), v.toString());
      Files.writeString(dir.resolve("figures.txt"), table);
      if (snapshots == 0) {
        snapshot("at the end of the run (the violations were judged after it)");
      }
    } catch (IOException e) {
      throw new UncheckedIOException("cannot keep the evidence in " + dir, e);
    }
    return dir;
  }

  private String timelineText() {
    StringBuilder sb = new StringBuilder("# start (UTC)              fault                  seconds  target\n");
    for (Nemesis.Injected i : timeline.get()) {
      sb.append(String.format("%-27s %-22s %7.1f  %s%n", i.startedAt(), i.fault(),
          (i.endNanos() - i.startNanos()) / 1e9, i.target()));
    }
    return sb.toString();
  }

  /** The objects the agents and the allocator act on, as the API server holds them (read directly, not proxied). */
  private void writeObjects(Path to) throws IOException {
    KubernetesClient c = cluster.api().client();
    Files.writeString(to.resolve("egressservices.json"),
        Serialization.asJson(c.resources(EgressService.class).inAnyNamespace().list()));
    Files.writeString(to.resolve("services.json"), Serialization.asJson(c.services().inAnyNamespace().list()));
    Files.writeString(to.resolve("endpointslices.json"),
        Serialization.asJson(c.discovery().v1().endpointSlices().inAnyNamespace().list()));
    Files.writeString(to.resolve("nodes.json"), Serialization.asJson(c.nodes().list()));
    Files.writeString(to.resolve("leases.json"),
        Serialization.asJson(c.leases().inNamespace(AgentProcess.LEASE_NAMESPACE).list()));
  }
}

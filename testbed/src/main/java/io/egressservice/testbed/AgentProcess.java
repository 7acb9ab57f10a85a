package io.egressservice.testbed;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The real node agent of one node, as the DaemonSet runs it: {@code java -cp <jar> io.egressservice.cli.Main run
 * --node-name N --netns <node's namespace> --kubeconfig <file> --metrics-port <free port>} with the DaemonSet's
 * JVM options and environment ({@link #DAEMONSET_JVM_OPTIONS}, {@code MALLOC_ARENA_MAX}, {@code
 * EGRESS_AGENT_POD_NAME}/{@code _POD_NAMESPACE}/{@code _POD_UID}), plus the cluster's extra flags. Its stdout and stderr go to a
 * log file ({@link #log()}). The process lives in the caller's network namespace (it reaches the API server on
 * 127.0.0.1) and acts on the node's namespace through {@code --netns}.
 */
public final class AgentProcess {
  /**
   * deploy/daemonset.yaml's JAVA_TOOL_OPTIONS, less its jna.tmpdir (the pod's read-only root) and TrimNativeHeapInterval
   * (a JDK before 17.0.9 refuses it). No memory limit applies here: the heap ceiling is 70 % of the host's.
   */
  public static final String DAEMONSET_JVM_OPTIONS = "-XX:+ExitOnOutOfMemoryError -XX:MaxRAMPercentage=70 -Xms16m "
      + "-Xmn12m -XX:MinHeapFreeRatio=25 -XX:MaxHeapFreeRatio=40 -XX:-ShrinkHeapInSteps -XX:+UseSerialGC -XX:TieredStopAtLevel=1 "
      + "-XX:ReservedCodeCacheSize=32m -Xss512k -Dsun.reflect.inflationThreshold=2147483647";
  public static final String LEASE_NAMESPACE = "egress-service-agent";
  private static final Duration READY_LIMIT = Duration.ofSeconds(60);

  private final String node;
  private final String netns;
  private final Path kubeconfig;
  private final Path log;
  private final List<String> extraArgs;
  private final Map<String, String> extraEnv;
  private final Runnable onStart;
  /** As the DaemonSet's downward API gives it: one pod, whose container may restart. */
  private final String podUid = java.util.UUID.randomUUID().toString();
  private Process process;
  private int metricsPort;
  private boolean suspended;

  AgentProcess(String node, String netns, Path kubeconfig, Path log, List<String> extraArgs,
      Map<String, String> extraEnv, Runnable onStart) {
    this.node = node;
    this.netns = netns;
    this.kubeconfig = kubeconfig;
    this.log = log;
    this.extraArgs = List.copyOf(extraArgs);
    this.extraEnv = Map.copyOf(extraEnv);
    this.onStart = onStart;
  }

  /** The command line the agent runs with (after {@code java}). */
  List<String> command() {
    List<String> cmd = new ArrayList<>(List.of(javaBinary()));
    cmd.addAll(AgentCds.jvmOptions());
    cmd.addAll(List.of("-cp", AgentCds.agentClassPath(),
        "io.egressservice.cli.Main", "run", "--node-name", node, "--netns", netns, "--kubeconfig",
        kubeconfig.toString(), "--metrics-port", Integer.toString(metricsPort)));
    cmd.addAll(extraArgs);
    return cmd;
  }

  /** Starts the process (a fresh metrics port each time); does not wait for it to be ready. */
  public synchronized void start() {
    if (running()) {
      throw new IllegalStateException("the agent of " + node + " is already running (pid " + process.pid() + ")");
    }
    try {
      metricsPort = freePort();
      ProcessBuilder pb = new ProcessBuilder(command()).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
      Map<String, String> env = pb.environment();
      // nothing of the caller's own configuration leaks into the agent
      env.keySet().removeIf(k -> k.startsWith("EGRESS_AGENT_") || k.startsWith("KUBERNETES_") || k.equals("KUBECONFIG")
          || k.equals("JAVA_TOOL_OPTIONS") || k.equals("JDK_JAVA_OPTIONS"));
      env.put("JAVA_TOOL_OPTIONS", DAEMONSET_JVM_OPTIONS);
      env.put("MALLOC_ARENA_MAX", "2");
      env.put("EGRESS_AGENT_POD_NAME", "egress-service-agent-" + node);
      env.put("EGRESS_AGENT_POD_NAMESPACE", LEASE_NAMESPACE);
      env.put("EGRESS_AGENT_POD_UID", podUid);
      env.put("EGRESS_AGENT_SERVICE_CIDR", Addresses.SERVICE_CIDR_V4 + "," + Addresses.SERVICE_CIDR_V6);
      env.put("EGRESS_AGENT_LOG_LEVEL", "info");
      env.putAll(extraEnv);
      process = pb.start();
      onStart.run();
    } catch (IOException e) {
      throw new IllegalStateException("cannot start the agent of " + node + ": " + e.getMessage(), e);
    }
  }

  /** Waits (at most 60 s) until {@code /readyz} answers 200: informers synced, first reconcile applied. */
  public void awaitReady() {
    long deadline = System.nanoTime() + READY_LIMIT.toNanos();
    HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofMillis(500)).build();
    while (System.nanoTime() < deadline) {
      if (!running()) {
        throw new IllegalStateException("the agent of " + node + " exited (" + process.exitValue() + "); its log:\n"
            + tail(40));
      }
      try {
        HttpResponse<Void> r = http.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort + "/readyz"))
            .timeout(Duration.ofSeconds(1)).build(), HttpResponse.BodyHandlers.discarding());
        if (r.statusCode() == 200) {
          return;
        }
      } catch (IOException e) {
        // not listening yet
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        throw new IllegalStateException(e);
      }
      pause(100);
    }
    throw new IllegalStateException("the agent of " + node + " was not ready within " + READY_LIMIT.toSeconds()
        + " s; its log:\n" + tail(40));
  }

  /**
   * SIGSTOP: the agent stalls as in a long GC pause or CPU starvation; its kernel state keeps forwarding and its
   * listening sockets still complete handshakes (the kernel queues the connections), but nothing answers.
   */
  public synchronized void suspend() {
    if (!running()) {
      throw new IllegalStateException("the agent of " + node + " is not running");
    }
    signal("STOP");
    suspended = true;
  }

  /** SIGCONT after {@link #suspend()}. */
  public synchronized void resume() {
    if (suspended && running()) {
      signal("CONT");
    }
    suspended = false;
  }

  public synchronized boolean suspended() {
    return suspended && running();
  }

  private void signal(String name) {
    try {
      Process kill = new ProcessBuilder("kill", "-" + name, Long.toString(process.pid()))
          .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
      if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
        throw new IllegalStateException("kill -" + name + " " + process.pid() + " failed");
      }
    } catch (IOException e) {
      throw new IllegalStateException("cannot run kill: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** SIGTERM, as the kubelet stops a pod: the agent leaves the kernel state in place. Waits up to 30 s. */
  public synchronized void stop() {
    if (process == null) {
      return;
    }
    resume(); // a stopped process keeps SIGTERM pending until it runs again
    process.destroy();
    waitOrKill(Duration.ofSeconds(30));
  }

  /** SIGKILL (a crash, or a node that lost power): no shutdown at all. */
  public synchronized void kill() {
    if (process == null) {
      return;
    }
    process.destroyForcibly();
    waitOrKill(Duration.ofSeconds(10));
  }

  private void waitOrKill(Duration limit) {
    suspended = false; // SIGKILL ends a stopped process too
    try {
      if (!process.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
        process.destroyForcibly();
        process.waitFor(5, TimeUnit.SECONDS);
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      process.destroyForcibly();
    }
  }

  public synchronized boolean running() {
    return process != null && process.isAlive();
  }

  /** The process id, while it runs. */
  public synchronized Optional<Long> pid() {
    return running() ? Optional.of(process.pid()) : Optional.empty();
  }

  public String node() {
    return node;
  }

  /** Port of /metrics, /healthz and /readyz on 127.0.0.1. */
  public int metricsPort() {
    return metricsPort;
  }

  /** The /metrics page (Prometheus text). */
  public String metrics() {
    try {
      return HttpClient.newHttpClient().send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + metricsPort
          + "/metrics")).timeout(Duration.ofSeconds(2)).build(), HttpResponse.BodyHandlers.ofString()).body();
    } catch (IOException e) {
      throw new IllegalStateException("the agent of " + node + " does not answer on /metrics: " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

  /** The sum of one sample's values over its labels on /metrics (0 when absent). */
  public double metric(String name) {
    double sum = 0;
    for (String line : metrics().split("\n")) {
      if (line.startsWith(name + " ") || line.startsWith(name + "{")) {
        sum += Double.parseDouble(line.substring(line.lastIndexOf(' ') + 1));
      }
    }
    return sum;
  }

  /** The agent's log file (every start of this node's agent appends to it). */
  public Path log() {
    return log;
  }

  /** The last {@code lines} lines of the log. */
  public String tail(int lines) {
    try {
      List<String> all = Files.readAllLines(log);
      return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
    } catch (IOException e) {
      return "(no log: " + e.getMessage() + ")";
    }
  }

  private static String javaBinary() {
    return Path.of(System.getProperty("java.home"), "bin", "java").toString();
  }

  private static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0)) {
      return s.getLocalPort();
    }
  }

  private static void pause(long millis) {
    try {
      Thread.sleep(millis);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

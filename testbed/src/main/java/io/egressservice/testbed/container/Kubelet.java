package io.egressservice.testbed.container;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.egressservice.netlink.NetnsThread;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One pod on one node, as the kubelet runs it: {@code podman kube play} of the Pod that {@link PodSpecs} makes of a
 * rendered template (a hostNetwork pod from inside the node's network namespace, any other pod with its network set
 * to the namespace it is given), and the container's startup, liveness and readiness probes run from the node as the
 * kubelet runs them: HTTP GET to the pod's IP and the named port from a thread in the node's namespace, every {@code
 * periodSeconds} after {@code initialDelaySeconds}, each bounded by {@code timeoutSeconds}, a status from 200 to 399
 * a success; liveness and readiness only once the startup probe has succeeded; {@code failureThreshold} failures of
 * the startup or liveness probe restart the container (stopped within the pod's grace period), of the readiness
 * probe make the pod unready until {@code successThreshold} successes. Only the pod's first container is probed (the
 * chart's pods have one).
 */
public final class Kubelet implements AutoCloseable {
  private static final YAMLMapper YAML = new YAMLMapper();

  /** One probe of a container, with the kubelet's defaults for what the template leaves out. */
  record Probe(String kind, String path, int port, int initialDelay, int period, int timeout, int successThreshold,
      int failureThreshold) {
    static Optional<Probe> of(String kind, JsonNode container) {
      JsonNode p = container.path(kind);
      if (p.isMissingNode()) {
        return Optional.empty();
      }
      if (!p.has("httpGet")) {
        throw new IllegalArgumentException(kind + ": only httpGet probes are run by the testbed's kubelet");
      }
      return Optional.of(new Probe(kind, p.path("httpGet").path("path").asText("/"),
          PodSpecs.port(container, p.path("httpGet").path("port")), p.path("initialDelaySeconds").asInt(0),
          p.path("periodSeconds").asInt(10), p.path("timeoutSeconds").asInt(1), p.path("successThreshold").asInt(1),
          p.path("failureThreshold").asInt(3)));
    }
  }

  private final Podman podman;
  private final String pod;
  private final String container;
  private final String probeHost;
  private final int grace;
  private final Optional<Probe> startup;
  private final Optional<Probe> liveness;
  private final Optional<Probe> readiness;
  private final NetnsThread node;
  private final Thread prober;
  private final AtomicInteger restarts = new AtomicInteger();
  private final List<String> events = new ArrayList<>();
  private volatile boolean ready;
  private volatile boolean stopped;

  /**
   * Plays the pod and starts probing it. {@code netns} is the node's namespace (a hostNetwork pod's network, and
   * where the probes come from); {@code podNetns}, for a pod without hostNetwork, is the namespace its network is.
   */
  Kubelet(Podman podman, JsonNode template, PodSpecs.Placement at, String netns, Optional<String> podNetns, Path dir) {
    this.podman = podman;
    ObjectNode manifest = PodSpecs.pod(template, at);
    JsonNode first = template.path("spec").path("containers").get(0);
    this.pod = at.podName();
    this.container = pod + "-" + first.path("name").asText();
    this.probeHost = at.podIp();
    this.grace = template.path("spec").path("terminationGracePeriodSeconds").asInt(30);
    this.startup = Probe.of("startupProbe", first);
    this.liveness = Probe.of("livenessProbe", first);
    this.readiness = Probe.of("readinessProbe", first);
    boolean hostNetwork = manifest.path("spec").path("hostNetwork").asBoolean(false);
    if (!hostNetwork) {
      // podman 4.3's pods cannot join a network namespace by path: podman runs inside the pod's network namespace
      // and gives the pod that one as its "host" network
      ((ObjectNode) manifest.get("spec")).put("hostNetwork", true);
    }
    String network = hostNetwork ? netns
        : podNetns.orElseThrow(() -> new IllegalArgumentException("a pod without hostNetwork needs a pod network"));
    Path file = dir.resolve(pod + ".yaml");
    try {
      Files.writeString(file, YAML.writeValueAsString(manifest));
      podman.runIn(network, Duration.ofSeconds(180), "kube", "play", file.toString());
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    } catch (RuntimeException e) {
      podman.tryRun(Optional.empty(), Duration.ofSeconds(60), List.of("pod", "rm", "-f", pod));
      throw e;
    }
    this.node = NetnsThread.enter(Optional.of(netns));
    this.prober = new Thread(this::probeLoop, "kubelet-" + pod);
    prober.setDaemon(true);
    prober.start();
  }

  /** The pod's name. */
  public String pod() {
    return pod;
  }

  /** Whether the readiness probe passes (after the startup probe has). */
  public boolean ready() {
    return ready;
  }

  /** How many times the kubelet restarted the container for a failed startup or liveness probe. */
  public int restarts() {
    return restarts.get();
  }

  /** What the kubelet did (probe failures, restarts), for failure messages. */
  public synchronized List<String> events() {
    return List.copyOf(events);
  }

  /** Waits until ready; throws with the container's log when it is not within {@code limit}. */
  public void awaitReady(Duration limit) {
    long deadline = System.nanoTime() + limit.toNanos();
    while (!ready && System.nanoTime() < deadline) {
      sleep(100);
    }
    if (!ready) {
      throw new IllegalStateException("pod " + pod + " was not ready within " + limit.toSeconds() + " s; kubelet: "
          + events() + "; its log:\n" + tail(40));
    }
  }

  /** The container's main process id on this machine, while it runs. */
  public Optional<Long> pid() {
    Podman.Result r = podman.tryRun(Optional.empty(), Duration.ofSeconds(30),
        List.of("inspect", "--format", "{{.State.Pid}}", container));
    try {
      long pid = Long.parseLong(r.stdout().trim());
      return pid > 0 ? Optional.of(pid) : Optional.empty();
    } catch (NumberFormatException e) {
      return Optional.empty();
    }
  }

  /** {@code kubectl logs}: what the container wrote to stdout and stderr. */
  public String logs() {
    Podman.Result r = podman.tryRun(Optional.empty(), Duration.ofSeconds(30), List.of("logs", container));
    return r.stdout() + r.stderr();
  }

  /** The last {@code lines} lines of the container's log. */
  public String tail(int lines) {
    List<String> all = logs().lines().toList();
    return String.join("\n", all.subList(Math.max(0, all.size() - lines), all.size()));
  }

  /**
   * Deletes the pod as the kubelet does: SIGTERM, SIGKILL after the pod's terminationGracePeriodSeconds; returns how
   * long the container took to exit.
   */
  public Duration stop() {
    stopped = true;
    ready = false;
    long start = System.nanoTime();
    podman.tryRun(Optional.empty(), Duration.ofSeconds(grace + 30L), List.of("pod", "stop", "-t", Integer.toString(grace), pod));
    Duration took = Duration.ofNanos(System.nanoTime() - start);
    remove();
    return took;
  }

  /** The node lost power: SIGKILL, no shutdown. */
  public void kill() {
    stopped = true;
    ready = false;
    podman.tryRun(Optional.empty(), Duration.ofSeconds(30), List.of("pod", "kill", "-s", "KILL", pod));
    remove();
  }

  private void remove() {
    prober.interrupt();
    // podman can lose a race with its own concurrent commands and leave an empty pod behind: removal is tried again
    for (int attempt = 0; attempt < 3; attempt++) {
      podman.tryRun(Optional.empty(), Duration.ofSeconds(60), List.of("pod", "rm", "-f", pod));
      if (podman.tryRun(Optional.empty(), Duration.ofSeconds(30), List.of("pod", "exists", pod)).exitCode() != 0) {
        break;
      }
    }
    node.close();
  }

  /** Removes the pod if it still runs (SIGKILL). */
  @Override
  public void close() {
    if (!stopped) {
      kill();
    }
  }

  // ---- the probes -------------------------------------------------------------------------------------

  private void probeLoop() {
    try {
      while (!stopped) {
        if (startup.isPresent() && !passes(startup.get())) {
          restart("startup probe failed " + startup.get().failureThreshold() + " times");
          continue;
        }
        runAfterStartup();
      }
    } catch (InterruptedException e) {
      // stopped
    }
  }

  /** Liveness and readiness, each on its own period, until liveness fails (then a restart) or the pod stops. */
  private void runAfterStartup() throws InterruptedException {
    long now = System.nanoTime();
    long nextLive = now + seconds(liveness.map(Probe::initialDelay).orElse(0));
    long nextReady = now + seconds(readiness.map(Probe::initialDelay).orElse(0));
    int liveFailures = 0;
    int readyFailures = 0;
    int readySuccesses = 0;
    if (readiness.isEmpty()) {
      ready = true;
    }
    while (!stopped) {
      now = System.nanoTime();
      if (readiness.isPresent() && now >= nextReady) {
        Probe r = readiness.get();
        if (probe(r)) {
          readyFailures = 0;
          if (++readySuccesses >= r.successThreshold()) {
            ready = true;
          }
        } else {
          readySuccesses = 0;
          if (++readyFailures >= r.failureThreshold() && ready) {
            ready = false;
            note("readiness probe failed " + readyFailures + " times: unready");
          }
        }
        nextReady = now + seconds(r.period());
      }
      if (liveness.isPresent() && now >= nextLive) {
        Probe l = liveness.get();
        liveFailures = probe(l) ? 0 : liveFailures + 1;
        if (liveFailures >= l.failureThreshold()) {
          restart("liveness probe failed " + liveFailures + " times");
          return;
        }
        nextLive = now + seconds(l.period());
      }
      Thread.sleep(50);
    }
  }

  /** Runs {@code p} until it succeeds (true) or fails {@code failureThreshold} times in a row (false). */
  private boolean passes(Probe p) throws InterruptedException {
    Thread.sleep(p.initialDelay() * 1000L);
    int failures = 0;
    while (!stopped) {
      long start = System.nanoTime();
      if (probe(p)) {
        return true;
      }
      if (++failures >= p.failureThreshold()) {
        return false;
      }
      long left = seconds(p.period()) - (System.nanoTime() - start);
      if (left > 0) {
        Thread.sleep(left / 1_000_000, (int) (left % 1_000_000));
      }
    }
    throw new InterruptedException("stopped");
  }

  private void restart(String why) throws InterruptedException {
    if (stopped) {
      return;
    }
    ready = false;
    note(why + ": container restarted");
    restarts.incrementAndGet();
    podman.tryRun(Optional.empty(), Duration.ofSeconds(grace + 30L),
        List.of("restart", "-t", Integer.toString(grace), container));
  }

  /** One HTTP GET from the node, as the kubelet's prober sends it. */
  boolean probe(Probe p) throws InterruptedException {
    if (Thread.interrupted()) {
      throw new InterruptedException();
    }
    try {
      SocketChannel channel = node.call(SocketChannel::open); // a socket of the node's namespace
      try (channel) {
        channel.socket().connect(new InetSocketAddress(probeHost, p.port()), p.timeout() * 1000);
        channel.socket().setSoTimeout(p.timeout() * 1000);
        String host = probeHost.contains(":") ? "[" + probeHost + "]" : probeHost;
        channel.write(ByteBuffer.wrap(("GET " + p.path() + " HTTP/1.1\r\nHost: " + host + ":" + p.port()
            + "\r\nUser-Agent: kube-probe/1.31\r\nAccept: */*\r\nConnection: close\r\n\r\n")
            .getBytes(StandardCharsets.ISO_8859_1)));
        InputStream in = channel.socket().getInputStream();
        String status = statusLine(in);
        String[] parts = status.split(" ");
        int code = parts.length > 1 ? Integer.parseInt(parts[1]) : 0;
        return code >= 200 && code < 400;
      }
    } catch (IOException | RuntimeException e) {
      return false;
    }
  }

  private static String statusLine(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int b; (b = in.read()) >= 0 && b != '\n' && sb.length() < 200; ) {
      sb.append((char) b);
    }
    return sb.toString().trim();
  }

  private synchronized void note(String event) {
    events.add(event);
  }

  private static long seconds(int s) {
    return s * 1_000_000_000L;
  }

  private static void sleep(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }

}

package io.egressservice.health;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.health.HealthServer.Probe;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The probe port's connection budget against clients that read {@code /metrics} slowly: the kubelet's probes and
 * the allocator's challenge probe are answered whatever they do, and {@code /metrics} is text only.
 */
class ProbePortBudgetTest {
  private static final Probe OK = new Probe(true, "reconcile loop alive");
  /** The kubelet's default probe timeout. */
  private static final Duration KUBELET_TIMEOUT = Duration.ofSeconds(1);
  private static final String KEY = "k".repeat(16) + "0123456789abcdefghijklmnopqrstuv";

  private final List<AutoCloseable> toClose = new ArrayList<>();
  private NetnsThread inside;

  @AfterEach
  void tearDown() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  /**
   * 64 clients (the port's whole budget) read a large {@code /metrics} (300 service series) a few bytes at a time,
   * reconnecting as soon as they are cut off, half of them asking for the protobuf debug format: every {@code
   * /healthz} and {@code /readyz} probe is answered within the kubelet's timeout, and so is the allocator's
   * challenge probe, with a proof.
   */
  @Test
  void slowMetricsReadersCannotStarveTheProbes() throws Exception {
    PrometheusRegistry registry = largeRegistry();
    Path dir = Files.createTempDirectory("probe-key");
    Files.writeString(dir.resolve("key"), KEY);
    toClose.add(() -> {
      Files.delete(dir.resolve("key"));
      Files.delete(dir);
    });
    ProbeKeys keys = ProbeKeys.fromFile(dir.resolve("key"), Duration.ofSeconds(2));
    // A network namespace whose TCP send buffers stay as small as over a real link (loopback's 64 KB segments let
    // the kernel take a whole answer at once, and no reader would ever be slow).
    Privileges.assumeNetAdmin();
    Netns ns = Netns.create("budget");
    toClose.add(ns);
    ns.exec("ip", "link", "set", "lo", "up");
    ns.exec("sysctl", "-q", "-w", "net.ipv4.tcp_wmem=4096 16384 65536");
    inside = NetnsThread.enter(Optional.of(ns.name()));
    toClose.add(inside);
    HealthServer server = inside.call(() -> HealthServer.start(
        new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), new ProbeIdentity("node-a", Optional.of("uid-a")),
        keys, registry, () -> OK, () -> OK));
    toClose.add(server);
    int port = server.port();
    String scrape;
    try (Socket s = socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
      s.setSoTimeout(5000);
      s.getOutputStream().write("GET /metrics HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      scrape = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
    assertThat(scrape.length()).as("the answer a slow reader holds").isGreaterThan(70_000);

    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger fullAnswersHeld = new AtomicInteger();
    ExecutorService readers = Executors.newFixedThreadPool(64);
    toClose.add(() -> {
      stop.set(true);
      readers.shutdownNow();
      readers.awaitTermination(15, TimeUnit.SECONDS);
    });
    for (int i = 0; i < 64; i++) {
      String path = i % 2 == 0 ? "/metrics" : "/metrics?debug=prometheus-protobuf";
      readers.submit(() -> readSlowly(this::socket, port, path, stop, fullAnswersHeld));
    }
    Thread.sleep(1500); // every slot taken by a reader

    List<String> failures = new ArrayList<>();
    int probes = 0;
    long end = System.nanoTime() + Duration.ofSeconds(6).toNanos();
    while (System.nanoTime() < end) {
      for (String path : List.of("/healthz", "/readyz")) {
        int status = get(port, path);
        probes++;
        if (status != 200) {
          failures.add(path + " " + status);
        }
      }
      if (!challengeProbeProved(port)) {
        failures.add("challenge probe");
      }
      probes++;
      Thread.sleep(100);
    }
    stop.set(true);

    assertThat(fullAnswersHeld.get()).as("readers that got a scrape to read slowly").isPositive();
    assertThat(probes).isGreaterThan(40);
    assertThat(failures).as("probes not answered within %d ms, of %d", KUBELET_TIMEOUT.toMillis(), probes).isEmpty();
  }

  /** {@code ?debug=} and a protobuf Accept header get the text format, as a plain scrape does. */
  @Test
  void metricsAreTextWhateverTheQueryAsks() throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
    Gauge.builder().name("probe_test_gauge").help("g").register(registry).set(1);
    HealthServer server = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), registry,
        () -> OK, () -> OK);
    toClose.add(server);
    String plain = HealthServerTest.body(server.port(), "/metrics");
    String debug = HealthServerTest.body(server.port(), "/metrics?debug=prometheus-protobuf");
    assertThat(plain).contains("probe_test_gauge 1.0");
    assertThat(debug.substring(debug.indexOf("\r\n\r\n"))).as("the answer to ?debug=prometheus-protobuf")
        .isEqualTo(plain.substring(plain.indexOf("\r\n\r\n")));
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      s.setSoTimeout(5000);
      s.getOutputStream().write(("GET /metrics HTTP/1.1\r\nAccept: application/vnd.google.protobuf; "
          + "proto=io.prometheus.client.MetricFamily; encoding=delimited\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      String protobuf = new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      assertThat(protobuf).contains("Content-Type: text/plain").contains("probe_test_gauge 1.0");
    }
    assertThat(HealthServerTest.body(server.port(), "/metrics?name[]=probe_test_gauge&debug=text"))
        .as("name[] filters still apply").contains("probe_test_gauge 1.0").doesNotContain("# HELP jvm");
  }

  /** 300 EgressServices' allocation series, as a large cluster's leader exports them (about 76 KB). */
  private static PrometheusRegistry largeRegistry() {
    PrometheusRegistry registry = new PrometheusRegistry();
    Gauge g = Gauge.builder().name("egress_service_agent_service_allocation")
        .help("1 per EgressService: its status.host and the reason of the decision.")
        .labelNames("service_namespace", "service", "host", "reason").register(registry);
    for (int i = 0; i < 300; i++) {
      g.labelValues("team-" + (i % 17) + "-with-a-rather-long-namespace-name",
          "service-" + i + "-with-a-long-name-as-people-write-them", "worker-node-" + (i % 9) + ".example.internal",
          "HostAllocatedOnTheFirstPass").set(1);
    }
    return registry;
  }

  /**
   * Connects with a small receive buffer, asks for {@code path} and reads its answer 64 bytes every 200 ms, until
   * cut off (then again) or told to stop.
   */
  private static void readSlowly(SocketFactory sockets, int port, String path, AtomicBoolean stop,
      AtomicInteger fullAnswersHeld) {
    long deadline = System.nanoTime() + Duration.ofSeconds(15).toNanos();
    while (!stop.get() && System.nanoTime() < deadline) {
      try (Socket s = sockets.open()) {
        s.setReceiveBufferSize(2048);
        s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1000);
        s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n")
            .getBytes(StandardCharsets.US_ASCII));
        InputStream in = s.getInputStream();
        byte[] buf = new byte[64];
        int first = in.read(buf);
        if (first > 0 && new String(buf, 0, first, StandardCharsets.US_ASCII).startsWith("HTTP/1.1 200")) {
          fullAnswersHeld.incrementAndGet();
        }
        while (!stop.get() && in.read(buf) > 0) {
          Thread.sleep(200);
        }
      } catch (IOException e) {
        // cut off: connect again
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** The allocator's probe: GET /healthz with a fresh challenge; true when a valid proof came within the timeout. */
  private boolean challengeProbeProved(int port) throws IOException {
    String challenge = ProbeProof.newChallenge(new SecureRandom());
    try (Socket s = socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) KUBELET_TIMEOUT.toMillis());
      s.setSoTimeout((int) KUBELET_TIMEOUT.toMillis());
      s.getOutputStream().write(("GET /healthz HTTP/1.0\r\n" + ProbeProof.CHALLENGE_HEADER + ": " + challenge
          + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
      Optional<String> proof = header(answer, ProbeProof.PROOF_HEADER);
      return answer.startsWith("HTTP/1.1 200") && ProbeProof.verify(keyList(), proof, challenge, "node-a",
          header(answer, ProbeIdentity.POD_UID_HEADER), 200);
    } catch (java.net.SocketTimeoutException | java.net.SocketException e) {
      return false;
    }
  }

  private interface SocketFactory {
    Socket open() throws IOException;
  }

  /** A socket in the test's namespace. */
  private Socket socket() throws IOException {
    try {
      return inside.call(() -> SocketChannel.open().socket());
    } catch (RuntimeException e) {
      throw new IOException(e);
    }
  }

  /** A kubelet probe: the status, or -1 when no answer came within its timeout. */
  private int get(int port, String path) {
    try (Socket s = socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) KUBELET_TIMEOUT.toMillis());
      s.setSoTimeout((int) KUBELET_TIMEOUT.toMillis());
      s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      String status = new String(s.getInputStream().readNBytes(12), StandardCharsets.US_ASCII);
      return status.startsWith("HTTP/1.") ? Integer.parseInt(status.substring(9, 12)) : -2;
    } catch (IOException e) {
      return -1;
    }
  }

  private static List<ProbeKeys.Key> keyList() {
    return List.of(new ProbeKeys.Key(KEY.getBytes(StandardCharsets.UTF_8)));
  }

  private static Optional<String> header(String answer, String name) {
    return answer.lines().takeWhile(l -> !l.isEmpty()).filter(l -> l.startsWith(name + ": "))
        .map(l -> l.substring(name.length() + 2)).findFirst();
  }
}

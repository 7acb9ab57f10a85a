package io.egressservice.health;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.health.HealthServer.Probe;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The metrics and probe port against clients that misbehave, through real sockets on loopback. */
class HealthServerTest {
  static final Probe OK = new Probe(true, "reconcile loop alive");

  final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  /** GET over a fresh connection; the status code, or -1 when no answer came within {@code timeout}. */
  static int get(int port, String path, Duration timeout) {
    try (Socket s = new Socket()) {
      s.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), (int) timeout.toMillis());
      s.setSoTimeout((int) timeout.toMillis());
      s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      String status = new String(s.getInputStream().readNBytes(12), StandardCharsets.US_ASCII);
      return status.startsWith("HTTP/1.") ? Integer.parseInt(status.substring(9, 12)) : -2;
    } catch (SocketTimeoutException e) {
      return -1;
    } catch (IOException e) {
      return -3;
    }
  }

  static String body(int port, String path) throws IOException {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(5000);
      s.getOutputStream().write(("GET " + path + " HTTP/1.1\r\nHost: localhost\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }

  /**
   * A dozen clients sending a byte every second (and a hundred that send nothing)
   * made /healthz time out, so the kubelet would have restarted a healthy agent. Now each answer comes
   * within a second while they keep at it.
   */
  @Test
  void slowClientsDoNotStarveHealthz() throws Exception {
    HealthServer server = HealthServer.start(0, new PrometheusRegistry(), () -> OK, () -> OK);
    toClose.add(server);
    int port = server.port();
    AtomicBoolean stop = new AtomicBoolean();
    AtomicInteger cutOff = new AtomicInteger();
    ExecutorService slow = Executors.newFixedThreadPool(12);
    List<Socket> idle = new ArrayList<>();
    toClose.add(() -> {
      stop.set(true);
      slow.shutdownNow();
      slow.awaitTermination(10, TimeUnit.SECONDS);
      for (Socket s : idle) {
        s.close();
      }
    });
    for (int i = 0; i < 12; i++) {
      slow.submit(() -> dribble(port, stop, cutOff));
    }
    for (int i = 0; i < 100; i++) {
      idle.add(new Socket(InetAddress.getLoopbackAddress(), port));
    }

    List<Integer> answers = new ArrayList<>();
    long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (System.nanoTime() < end) {
      answers.add(get(port, "/healthz", Duration.ofSeconds(1)));
      Thread.sleep(200); // the kubelet's pace, faster
    }
    stop.set(true);

    assertThat(answers).hasSizeGreaterThan(10).containsOnly(200);
    assertThat(cutOff.get()).as("slow clients cut off by the request deadline").isPositive();
  }

  /** Connects and sends a request one byte per second, reconnecting when cut off, until told to stop (at most 10 s). */
  static void dribble(int port, AtomicBoolean stop, AtomicInteger cutOff) {
    byte[] request = "GET /metrics HTTP/1.1\r\nHost: localhost\r\nX-Padding: aaaaaaaaaaaaaaaaaaaa\r\n\r\n"
        .getBytes(StandardCharsets.US_ASCII);
    long deadline = System.nanoTime() + Duration.ofSeconds(10).toNanos();
    while (!stop.get() && System.nanoTime() < deadline) {
      try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
        OutputStream out = s.getOutputStream();
        for (int i = 0; i < request.length && !stop.get() && System.nanoTime() < deadline; i++) {
          out.write(request[i]);
          out.flush();
          Thread.sleep(1000);
        }
      } catch (IOException e) {
        cutOff.incrementAndGet();
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  @Test
  void aSlowScrapeDelaysNeitherProbeAndExtraScrapesAreTurnedAway() throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
    Counter.builder().name("test_total").help("t").register(registry);
    AtomicBoolean slowScrape = new AtomicBoolean(true);
    registry.register(() -> {
      long until = System.nanoTime() + Duration.ofMillis(1500).toNanos();
      while (slowScrape.get() && System.nanoTime() < until) {
        Thread.onSpinWait();
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          Thread.currentThread().interrupt();
          break;
        }
      }
      return Counter.builder().name("slow_total").help("s").build().collect();
    });
    HealthServer server = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), registry,
        () -> OK, () -> new Probe(false, "informers not synced yet"));
    toClose.add(server);
    toClose.add(() -> slowScrape.set(false));
    ExecutorService scrapes = Executors.newFixedThreadPool(4);
    toClose.add(scrapes::shutdownNow);
    List<java.util.concurrent.Future<Integer>> results = new ArrayList<>();
    for (int i = 0; i < 4; i++) {
      results.add(scrapes.submit(() -> get(server.port(), "/metrics", Duration.ofSeconds(10))));
    }
    Thread.sleep(300);

    assertThat(get(server.port(), "/healthz", Duration.ofSeconds(1))).isEqualTo(200);
    assertThat(get(server.port(), "/readyz", Duration.ofSeconds(1))).isEqualTo(503);
    List<Integer> codes = new ArrayList<>();
    for (var f : results) {
      codes.add(f.get(15, TimeUnit.SECONDS));
    }
    assertThat(codes).contains(200).contains(503).containsOnly(200, 503);
    slowScrape.set(false);
    assertThat(body(server.port(), "/metrics")).startsWith("HTTP/1.1 200").contains("test_total 0.0");
    assertThat(body(server.port(), "/nope")).startsWith("HTTP/1.1 404").contains("try /metrics, /healthz or /readyz");
  }

  /**
   * The metrics and probe threads died with the reconcile loop. A collector that throws fails its own
   * scrape (500) and nothing else: the probes, and the next scrape, are answered, and the server still serves.
   */
  @Test
  void aFailingScrapeIsAnsweredFiveHundredAndTheServerGoesOn() throws Exception {
    PrometheusRegistry registry = new PrometheusRegistry();
    Counter.builder().name("test_total").help("t").register(registry);
    AtomicBoolean failing = new AtomicBoolean(true);
    registry.register(() -> {
      if (failing.get()) {
        throw new IllegalStateException("a gauge's callback failed");
      }
      return Counter.builder().name("late_total").help("l").build().collect();
    });
    HealthServer server = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), registry,
        () -> OK, () -> OK);
    toClose.add(server);

    for (int i = 0; i < 5; i++) {
      assertThat(get(server.port(), "/metrics", Duration.ofSeconds(5))).isEqualTo(500);
      assertThat(get(server.port(), "/healthz", Duration.ofSeconds(1))).isEqualTo(200);
    }
    failing.set(false);

    assertThat(body(server.port(), "/metrics")).startsWith("HTTP/1.1 200").contains("test_total 0.0", "late_total");
    assertThat(server.serving()).isTrue();
  }

  @Test
  void servingEndsWithTheServer() throws Exception {
    HealthServer server = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
        new PrometheusRegistry(), () -> OK, () -> OK);
    assertThat(server.serving()).isTrue();

    server.close();

    assertThat(server.serving()).isFalse();
  }

  /** /healthz says what liveness says, a dead loop included, with its reason. */
  @Test
  void healthzReportsADeadLoop() throws Exception {
    HealthServer server = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
        new PrometheusRegistry(), () -> new Probe(false, "reconcile loop stuck or dead (idle 3 s)"), () -> OK);
    toClose.add(server);

    assertThat(body(server.port(), "/healthz")).startsWith("HTTP/1.1 503")
        .endsWith("not ok: reconcile loop stuck or dead (idle 3 s)\n");
  }

  @Test
  void theBindAddressIsTheOnlyOneListenedOn() throws Exception {
    HealthServer server = HealthServer.start(new InetSocketAddress(HealthServer.bindAddress("127.0.0.2"), 0),
        new PrometheusRegistry(), () -> OK, () -> OK);
    toClose.add(server);

    try (Socket s = new Socket(InetAddress.getByName("127.0.0.2"), server.port())) {
      s.getOutputStream().write("GET /healthz HTTP/1.1\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      InputStream in = s.getInputStream();
      assertThat(new String(in.readAllBytes(), StandardCharsets.UTF_8)).startsWith("HTTP/1.1 200").endsWith("ok: reconcile loop alive\n");
    }
    assertThat(get(server.port(), "/healthz", Duration.ofSeconds(1))).as("127.0.0.1 is not listened on").isEqualTo(-3);
    assertThat(HealthServer.bindAddress("[::1]").getHostAddress()).isEqualTo("0:0:0:0:0:0:0:1");
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> HealthServer.bindAddress("localhost"))
        .hasMessageContaining("'localhost' is not an IP address");
  }

  @Test
  void runRefusesABindAddressThatIsNotAnIpAddressAsAUserError() {
    var result = io.egressservice.cli.InProcess.run("run", "--node-name", "n", "--metrics-bind-address", "my-node.local");

    assertThat(result.exit()).isEqualTo(1);
    assertThat(result.err()).contains("--metrics-bind-address: 'my-node.local' is not an IP address");
  }

  /**
   * Every answer names the node and pod whose health it is, in headers: the status and the body (what kubelet and
   * people read) are as before, an HTTP/1.0 request gets the same. A plain server names no one.
   */
  @Test
  void healthzSaysWhoseHealthItIs() throws Exception {
    HealthServer server = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
        new ProbeIdentity("node-a", java.util.Optional.of("6f1c2b9e-1111-4c2d-9e8f-0123456789ab")),
        new PrometheusRegistry(), () -> OK, () -> new Probe(false, "informers not synced yet"));
    toClose.add(server);

    String healthz = body(server.port(), "/healthz");
    assertThat(healthz).startsWith("HTTP/1.1 200 OK\r\n")
        .contains("\r\nEgress-Agent-Node: node-a\r\n", "\r\nEgress-Agent-Pod-UID: 6f1c2b9e-1111-4c2d-9e8f-0123456789ab\r\n")
        .endsWith("\r\n\r\nok: reconcile loop alive\n");
    String readyz = body(server.port(), "/readyz");
    assertThat(readyz).startsWith("HTTP/1.1 503 ").contains("\r\nEgress-Agent-Node: node-a\r\n");
    assertThat(body(server.port(), "/nothing")).startsWith("HTTP/1.1 404 ").contains("\r\nEgress-Agent-Node: node-a\r\n");
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), server.port())) {
      s.setSoTimeout(5000);
      s.getOutputStream().write("GET /healthz HTTP/1.0\r\n\r\n".getBytes(StandardCharsets.US_ASCII));
      assertThat(new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8))
          .startsWith("HTTP/1.1 200 OK\r\n").contains("\r\nEgress-Agent-Node: node-a\r\n");
    }

    HealthServer anonymous = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
        new PrometheusRegistry(), () -> OK, () -> OK);
    toClose.add(anonymous);
    assertThat(body(anonymous.port(), "/healthz")).doesNotContain("Egress-Agent-");
  }

  @Test
  void aProbeIdentityCannotSplitTheAnswerHead() {
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ProbeIdentity("node-a\r\nX: y", java.util.Optional.empty()))
        .isInstanceOf(IllegalArgumentException.class);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> new ProbeIdentity("node-a", java.util.Optional.of("a b")))
        .isInstanceOf(IllegalArgumentException.class);
  }
}

package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.health.HealthServer;
import io.egressservice.health.ProbeIdentity;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What one probe concludes, against real sockets: a stalled agent (its port's kernel completes the handshake, nothing
 * answers) is agent down, not a silent node; an answer that does not name the probed node is no answer; a node whose
 * SYNs go unanswered is still no answer within the timeout.
 */
class AgentProberTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(1);
  private static final HealthServer.Probe OK = new HealthServer.Probe(true, "reconcile loop alive");

  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  private AgentProber prober(Optional<String> netns) {
    AgentProber p = new AgentProber(Duration.ofMillis(500), TIMEOUT, 1, netns, (node, seq, result) -> {});
    toClose.add(p);
    return p;
  }

  private static InetSocketAddress loopback(int port) {
    return new InetSocketAddress(InetAddress.getLoopbackAddress(), port);
  }

  /** A listening socket nobody accepts from, as a SIGSTOPped agent's: the kernel completes handshakes into the backlog. */
  @Test
  void aStalledAgentIsAgentDownNotSilent() throws Exception {
    ServerSocket stalled = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    toClose.add(stalled);
    AgentProber prober = prober(Optional.empty());

    long t0 = System.nanoTime();
    ProbeResult r = prober.probeOnce("node-a", loopback(stalled.getLocalPort()));
    double seconds = (System.nanoTime() - t0) / 1e9;

    assertThat(r).as("connected, then no answer within the timeout").isEqualTo(ProbeResult.AGENT_DOWN);
    assertThat(seconds).as("a probe still ends with its timeout").isBetween(0.9, 2.0);

    // an incomplete answer (a status line, then silence) is the same: the node is up, its agent is not answering
    int half = squatter("HTTP/1.0 200 OK\r\n", false);
    assertThat(prober.probeOnce("node-a", loopback(half))).isEqualTo(ProbeResult.AGENT_DOWN);
  }

  @Test
  void anAnswerFromAnotherNodeCountsAsNoAnswer() throws Exception {
    AgentProber prober = prober(Optional.empty());
    int nameless = squatter("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n", true);
    int otherNode = squatter("HTTP/1.0 200 OK\r\n" + ProbeIdentity.NODE_HEADER + ": node-b\r\n\r\nok\n", true);
    int otherNode503 = squatter("HTTP/1.1 503 Service Unavailable\r\n" + ProbeIdentity.NODE_HEADER
        + ": node-b\r\n\r\n", true);

    assertThat(prober.probeOnce("node-a", loopback(nameless))).as("200 from a process that names no node")
        .isEqualTo(ProbeResult.NO_ANSWER);
    assertThat(prober.probeOnce("node-a", loopback(otherNode))).as("200 from node-b's agent")
        .isEqualTo(ProbeResult.NO_ANSWER);
    assertThat(prober.probeOnce("node-a", loopback(otherNode503))).as("503 from node-b's agent")
        .isEqualTo(ProbeResult.NO_ANSWER);

    // controls: the node's own agent (the real server), healthy and not
    HealthServer own = HealthServer.start(loopback(0), new ProbeIdentity("node-a", Optional.of("uid-1")),
        new PrometheusRegistry(), () -> OK, () -> OK);
    toClose.add(own);
    assertThat(prober.probeOnce("node-a", loopback(own.port()))).isEqualTo(ProbeResult.HEALTHY);
    assertThat(prober.probeOnce("node-b", loopback(own.port()))).as("node-a's agent probed as node-b")
        .isEqualTo(ProbeResult.NO_ANSWER);
    HealthServer stuck = HealthServer.start(loopback(0), new ProbeIdentity("node-a", Optional.empty()),
        new PrometheusRegistry(), () -> new HealthServer.Probe(false, "reconcile loop stuck"), () -> OK);
    toClose.add(stuck);
    assertThat(prober.probeOnce("node-a", loopback(stuck.port()))).isEqualTo(ProbeResult.AGENT_DOWN);
  }

  /** A powered-off node: the SYN is dropped (nft in a namespace of its own), nothing answers at all. */
  @Test
  void aSilentNodeIsStillNoAnswer() {
    Privileges.assumeNetAdmin();
    Netns ns = Netns.create("silent");
    toClose.add(ns);
    ns.execWithInput("table inet silent {\n"
        + "  chain input { type filter hook input priority 0; policy accept; tcp dport 9464 drop; }\n"
        + "}\n", "nft", "-f", "-");
    AgentProber prober = prober(Optional.of(ns.name()));

    long t0 = System.nanoTime();
    ProbeResult r = prober.probeOnce("node-a", new InetSocketAddress(InetAddress.getLoopbackAddress(), 9464));
    double seconds = (System.nanoTime() - t0) / 1e9;

    assertThat(r).isEqualTo(ProbeResult.NO_ANSWER);
    assertThat(seconds).as("no answer is known after the timeout, not later").isBetween(0.9, 1.5);

    // control: a refused connection in the same namespace is the node answering, its agent down
    ns.execWithInput("flush table inet silent\n", "nft", "-f", "-");
    assertThat(prober.probeOnce("node-a", new InetSocketAddress(InetAddress.getLoopbackAddress(), 9464)))
        .isEqualTo(ProbeResult.AGENT_DOWN);
  }

  /** A process on the port that reads the request and sends {@code answer}, then closes or holds the connection. */
  private int squatter(String answer, boolean close) throws IOException {
    ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    List<Socket> held = new java.util.concurrent.CopyOnWriteArrayList<>();
    toClose.add(() -> {
      s.close();
      for (Socket c : held) {
        c.close();
      }
    });
    Thread t = new Thread(() -> {
      while (!s.isClosed()) {
        try {
          Socket c = s.accept();
          c.setSoTimeout(2000);
          c.getInputStream().read(new byte[512]);
          c.getOutputStream().write(answer.getBytes(StandardCharsets.US_ASCII));
          if (close) {
            c.close();
          } else {
            held.add(c);
          }
        } catch (IOException e) {
          // closed, or a probe that gave up
        }
      }
    }, "squatter");
    t.setDaemon(true);
    t.start();
    return s.getLocalPort();
  }
}

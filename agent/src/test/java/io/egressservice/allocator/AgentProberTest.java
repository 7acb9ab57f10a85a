package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.health.HealthServer;
import io.egressservice.health.ProbeIdentity;
import io.egressservice.health.ProbeKeys;
import io.egressservice.health.ProbeProof;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * What one probe concludes, against real sockets: a stalled agent (its port's kernel completes the handshake, nothing
 * answers) is agent down, not a silent node; an answer that is not provably the probed node's agent's is unproven (as
 * a refused connection), never healthy nor silent; a node whose SYNs go unanswered is still no answer within the
 * timeout.
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

  /**
   * An answer that does not name the probed node counts as a refused connection (the node is up, its agent is not
   * heard), not as silence: silence drains a host within two probes, so a process answering on the port must not
   * be able to make it look silent.
   */
  @Test
  void anAnswerNamingAnotherNodeOrNoneCountsAsRefusedNotSilent() throws Exception {
    AgentProber prober = prober(Optional.empty());
    int nameless = squatter("HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n", true);
    int otherNode = squatter("HTTP/1.0 200 OK\r\n" + ProbeIdentity.NODE_HEADER + ": node-b\r\n\r\nok\n", true);
    int otherNode503 = squatter("HTTP/1.1 503 Service Unavailable\r\n" + ProbeIdentity.NODE_HEADER
        + ": node-b\r\n\r\n", true);

    assertThat(prober.probeOnce("node-a", loopback(nameless))).as("200 from a process that names no node")
        .isEqualTo(ProbeResult.UNPROVEN);
    assertThat(prober.probeOnce("node-a", loopback(otherNode))).as("200 from node-b's agent")
        .isEqualTo(ProbeResult.UNPROVEN);
    assertThat(prober.probeOnce("node-a", loopback(otherNode503))).as("503 from node-b's agent")
        .isEqualTo(ProbeResult.UNPROVEN);

    // controls: the node's own agent (the real server), healthy and not
    HealthServer own = HealthServer.start(loopback(0), new ProbeIdentity("node-a", Optional.of("uid-1")),
        new PrometheusRegistry(), () -> OK, () -> OK);
    toClose.add(own);
    assertThat(prober.probeOnce("node-a", loopback(own.port()))).isEqualTo(ProbeResult.HEALTHY);
    assertThat(prober.probeOnce("node-b", loopback(own.port()))).as("node-a's agent probed as node-b")
        .isEqualTo(ProbeResult.UNPROVEN);
    HealthServer stuck = HealthServer.start(loopback(0), new ProbeIdentity("node-a", Optional.empty()),
        new PrometheusRegistry(), () -> new HealthServer.Probe(false, "reconcile loop stuck"), () -> OK);
    toClose.add(stuck);
    assertThat(prober.probeOnce("node-a", loopback(stuck.port()))).isEqualTo(ProbeResult.AGENT_DOWN);
  }

  /**
   * With a probe key, only an answer proved under it for the probed node speaks for the node's agent: a process that
   * copies the identity headers (a Service's externalIP or a hostPort on the node's port), a replayed proof, an agent
   * with another key, or a relay that changes the status are all unproven; the real agent's answers, healthy or not,
   * and under the previous key during a rotation, are taken.
   */
  @Test
  void withAProbeKeyOnlyAProvedAnswerIsTheAgents() throws Exception {
    Path dir = Files.createTempDirectory("probe-key");
    toClose.add(() -> deleteTree(dir));
    ProbeKeys allocatorKeys = keys(dir.resolve("allocator"), KEY_A, Optional.of(KEY_B));
    List<String> reasons = new java.util.concurrent.CopyOnWriteArrayList<>();
    AgentProber prober = new AgentProber(Duration.ofMillis(500), TIMEOUT, 1, Optional.empty(), allocatorKeys,
        HostProbes.ProofMode.REQUIRE, (node, seq, result) -> {}, (node, address, reason) -> reasons.add(reason));
    toClose.add(prober);

    HealthServer agent = agent("node-a", keys(dir.resolve("agent"), KEY_A, Optional.empty()), () -> OK);
    assertThat(prober.probeOnce("node-a", loopback(agent.port()))).as("the agent, proving with the key")
        .isEqualTo(ProbeResult.HEALTHY);
    HealthServer rotated = agent("node-a", keys(dir.resolve("rotated"), KEY_B, Optional.empty()), () -> OK);
    assertThat(prober.probeOnce("node-a", loopback(rotated.port()))).as("an agent proving with the previous key")
        .isEqualTo(ProbeResult.HEALTHY);
    HealthServer sick = agent("node-a", keys(dir.resolve("sick"), KEY_A, Optional.empty()),
        () -> new HealthServer.Probe(false, "reconcile loop stuck"));
    assertThat(prober.probeOnce("node-a", loopback(sick.port()))).as("the agent, proving it is not healthy")
        .isEqualTo(ProbeResult.AGENT_DOWN);
    assertThat(reasons).as("no proven answer is counted as unproven").isEmpty();

    String headers = ProbeIdentity.NODE_HEADER + ": node-a\r\n" + ProbeIdentity.POD_UID_HEADER + ": uid-1\r\n";
    int copycat = squatter("HTTP/1.0 200 OK\r\n" + headers + "\r\nok\n", true);
    assertThat(prober.probeOnce("node-a", loopback(copycat))).as("200 with node-a's headers, no proof")
        .isEqualTo(ProbeResult.UNPROVEN);
    String captured = proofHeader(loopback(agent.port()));
    int replay = squatter("HTTP/1.0 200 OK\r\n" + headers.replace("uid-1", "uid-a") + captured + "\r\n\r\nok\n",
        true);
    assertThat(prober.probeOnce("node-a", loopback(replay))).as("a proof captured from the agent, replayed")
        .isEqualTo(ProbeResult.UNPROVEN);
    HealthServer stranger = agent("node-a", keys(dir.resolve("stranger"), KEY_C, Optional.empty()), () -> OK);
    assertThat(prober.probeOnce("node-a", loopback(stranger.port()))).as("an agent with another key")
        .isEqualTo(ProbeResult.UNPROVEN);
    assertThat(prober.probeOnce("node-b", loopback(agent.port()))).as("node-a's proving agent probed as node-b")
        .isEqualTo(ProbeResult.UNPROVEN);
    int relay = relayChangingStatus(loopback(sick.port()));
    assertThat(prober.probeOnce("node-a", loopback(relay))).as("a relay turning the agent's 503 into 200")
        .isEqualTo(ProbeResult.UNPROVEN);
    assertThat(reasons).containsExactly("no_proof", "bad_proof", "bad_proof", "other_node", "bad_proof");
  }

  /**
   * While learning (an upgrade from agents without proofs), an answer without proof is taken by the node it names
   * until that node's agent has proven one; from then on that node must go on proving.
   */
  @Test
  void whileLearningANodeMustKeepProvingOnceItHas() throws Exception {
    Path dir = Files.createTempDirectory("probe-key");
    toClose.add(() -> deleteTree(dir));
    List<String> reasons = new java.util.concurrent.CopyOnWriteArrayList<>();
    AgentProber prober = new AgentProber(Duration.ofMillis(500), TIMEOUT, 1, Optional.empty(),
        keys(dir.resolve("allocator"), KEY_A, Optional.empty()), HostProbes.ProofMode.LEARN,
        (node, seq, result) -> {}, (node, address, reason) -> reasons.add(reason));
    toClose.add(prober);
    HealthServer old = HealthServer.start(loopback(0), new ProbeIdentity("node-a", Optional.empty()),
        new PrometheusRegistry(), () -> OK, () -> OK);
    toClose.add(old);
    HealthServer upgraded = agent("node-a", keys(dir.resolve("agent"), KEY_A, Optional.empty()), () -> OK);

    assertThat(prober.probeOnce("node-a", loopback(old.port()))).as("an agent without proofs, not proven yet")
        .isEqualTo(ProbeResult.HEALTHY);
    assertThat(prober.probeOnce("node-a", loopback(upgraded.port()))).isEqualTo(ProbeResult.HEALTHY);
    assertThat(prober.probeOnce("node-a", loopback(old.port()))).as("no proof after node-a has proven one")
        .isEqualTo(ProbeResult.UNPROVEN);
    assertThat(reasons).containsExactly("no_proof_learning", "no_proof");
  }

  /** Without a key on either side the answers carry no proof and the agent's are taken by its name, as before. */
  @Test
  void withoutAKeyTheAgentAnswersUnprovedAndIsTakenByItsName() throws Exception {
    Path dir = Files.createTempDirectory("probe-key");
    toClose.add(() -> deleteTree(dir));
    HealthServer agent = agent("node-a", ProbeKeys.fromFile(dir.resolve("missing/key"), Duration.ZERO), () -> OK);
    assertThat(proofHeader(loopback(agent.port()))).as("an agent whose key file is missing").isEmpty();
    assertThat(prober(Optional.empty()).probeOnce("node-a", loopback(agent.port()))).isEqualTo(ProbeResult.HEALTHY);
  }

  private static final String KEY_A = "a".repeat(20) + "0123456789abcdefghijklmnopqrstuv";
  private static final String KEY_B = "b".repeat(20) + "0123456789abcdefghijklmnopqrstuv";
  private static final String KEY_C = "c".repeat(20) + "0123456789abcdefghijklmnopqrstuv";

  /** A key directory as the mounted Secret: {@code key}, and {@code previous} if given. */
  private static ProbeKeys keys(Path dir, String key, Optional<String> previous) throws IOException {
    Files.createDirectories(dir);
    Files.writeString(dir.resolve("key"), key + "\n");
    if (previous.isPresent()) {
      Files.writeString(dir.resolve(ProbeKeys.PREVIOUS), previous.get());
    }
    return ProbeKeys.fromFile(dir.resolve("key"), Duration.ZERO);
  }

  private HealthServer agent(String node, ProbeKeys keys, java.util.function.Supplier<HealthServer.Probe> liveness)
      throws IOException {
    HealthServer s = HealthServer.start(loopback(0), new ProbeIdentity(node, Optional.of("uid-a")), keys,
        new PrometheusRegistry(), liveness, () -> OK);
    toClose.add(s);
    return s;
  }

  /** The proof header line of an answer to a challenge of our own ("" without one). */
  private static String proofHeader(InetSocketAddress address) throws IOException {
    try (Socket s = new Socket()) {
      s.connect(address, 1000);
      s.setSoTimeout(2000);
      s.getOutputStream().write(("GET /healthz HTTP/1.0\r\n" + ProbeProof.CHALLENGE_HEADER + ": "
          + ProbeProof.newChallenge(new java.security.SecureRandom()) + "\r\n\r\n")
          .getBytes(StandardCharsets.US_ASCII));
      String answer = new String(s.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
      return answer.lines().filter(l -> l.startsWith(ProbeProof.PROOF_HEADER + ":")).findFirst().orElse("");
    }
  }

  /** Passes each request to {@code agent} and its answer back with 503 made 200. */
  private int relayChangingStatus(InetSocketAddress agent) throws IOException {
    ServerSocket s = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    toClose.add(s);
    Thread t = new Thread(() -> {
      while (!s.isClosed()) {
        try (Socket c = s.accept(); Socket up = new Socket()) {
          c.setSoTimeout(2000);
          byte[] buf = new byte[1024];
          int n = c.getInputStream().read(buf);
          up.connect(agent, 1000);
          up.getOutputStream().write(buf, 0, n);
          String answer = new String(up.getInputStream().readAllBytes(), StandardCharsets.ISO_8859_1);
          c.getOutputStream().write(answer.replace("503 Service Unavailable", "200 OK")
              .getBytes(StandardCharsets.ISO_8859_1));
        } catch (IOException e) {
          // closed, or a probe that gave up
        }
      }
    }, "relay");
    t.setDaemon(true);
    t.start();
    return s.getLocalPort();
  }

  private static void deleteTree(Path dir) throws IOException {
    try (var paths = Files.walk(dir)) {
      for (Path p : paths.sorted(java.util.Comparator.reverseOrder()).toList()) {
        Files.delete(p);
      }
    }
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

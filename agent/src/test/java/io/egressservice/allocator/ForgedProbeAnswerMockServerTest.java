package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.health.ProbeIdentity;
import io.egressservice.health.ProbeKeys;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.metrics.ProbeMetrics;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Another process answering the allocator's probes on a node's address and port (a Service's externalIP or a pod's
 * hostPort taking the agent's port: every connection reaches it instead of the agent), through the real client,
 * informers and leader election against the mock API server. Its answers count as a refused connection: they neither
 * drain the node within two probes, as silence would, nor, with a probe key, keep it hosting once its agent is
 * gone.
 */
@EnableKubernetesMockClient(crud = true)
class ForgedProbeAnswerMockServerTest {
  private static final String KEY = "m".repeat(12) + "0123456789abcdefghijklmnopqrstuvwxyz";

  KubernetesMockServer server;
  KubernetesClient client;

  @RegisterExtension
  final ProbedCluster probed = new ProbedCluster(3);

  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  /** The finding: a 200 without the identity header drained the host within about a second. */
  @Test
  void aProcessAnsweringForTheHostWithoutItsNameDoesNotDrainIt() throws Exception {
    probed.cluster().egressService("web", null, null);
    AllocatorMetrics metrics = new AllocatorMetrics();
    AllocatorConfig config = probed.probing(4);
    AllocatorRunner r = probed.runner("allocator", config, metrics);
    probed.awaitHost("node1");
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().passes() > 0);

    probed.agent(1).stop();
    answerInsteadOfTheAgent(new InetSocketAddress("127.0.1.1", config.probes().port()),
        "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nok\n");
    long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < end) {
      assertThat(probed.cluster().host("web")).as("web's host while another process answers on node1's port")
          .hasValue("node1");
      assertThat(r.allocator().unreachableNodes()).isEmpty();
      Thread.sleep(100);
    }
    assertThat(metrics.probes().unprovenCount("127.0.1.1", ProbeMetrics.NO_NODE)).isPositive();
  }

  /** With a probe key, a 200 naming the host without a proof does not keep it hosting once its agent is gone. */
  @Test
  void aForgedHealthyAnswerDoesNotKeepAHostWhoseAgentIsGone() throws Exception {
    Path dir = Files.createTempDirectory("probe-key");
    toClose.add(() -> {
      try (var paths = Files.walk(dir)) {
        for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
          Files.delete(p);
        }
      }
    });
    Files.writeString(dir.resolve("key"), KEY);
    ProbeKeys keys = ProbeKeys.fromFile(dir.resolve("key"), Duration.ofSeconds(2));
    for (int i = 1; i <= 3; i++) {
      probed.agent(i).proveWith(keys);
    }
    HostProbes p = probed.probing(4).probes();
    AllocatorConfig config = probed.probing(4).withProbes(new HostProbes(p.enabled(), p.port(), p.interval(),
        p.timeout(), p.threads(), p.netns(), new HostHealth.Settings(2, Duration.ofSeconds(2), Duration.ofSeconds(1)),
        p.candidates(), keys, HostProbes.ProofMode.REQUIRE));
    probed.cluster().egressService("web", null, null);
    AllocatorMetrics metrics = new AllocatorMetrics();
    AllocatorRunner r = probed.runner("allocator", config, metrics);
    probed.awaitHost("node1");
    Thread.sleep(1500);
    assertThat(r.allocator().unreachableNodes()).as("the agents' proofs keep every node").isEmpty();

    probed.agent(1).stop();
    answerInsteadOfTheAgent(new InetSocketAddress("127.0.1.1", p.port()),
        "HTTP/1.0 200 OK\r\n" + ProbeIdentity.NODE_HEADER + ": node1\r\nContent-Length: 3\r\n\r\nok\n");
    await().atMost(Duration.ofSeconds(8)).pollInterval(Duration.ofMillis(100))
        .until(() -> probed.cluster().host("web").filter(h -> !h.equals("node1")).isPresent());
    assertThat(r.allocator().unreachableNodes()).containsExactly("node1");
    assertThat(metrics.probes().unprovenCount("127.0.1.1", ProbeMetrics.NO_PROOF)).isPositive();
  }

  /** Binds {@code address} (the agent's, just freed) and answers every connection with {@code answer}. */
  private void answerInsteadOfTheAgent(InetSocketAddress address, String answer) throws IOException {
    ServerSocket s = await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(() -> {
          ServerSocket b = new ServerSocket();
          b.setReuseAddress(true);
          b.bind(address, 64);
          return b;
        }, x -> true);
    toClose.add(s);
    Thread t = new Thread(() -> {
      while (!s.isClosed()) {
        try (Socket c = s.accept()) {
          c.setSoTimeout(1000);
          c.getInputStream().read(new byte[1024]);
          c.getOutputStream().write(answer.getBytes(StandardCharsets.US_ASCII));
        } catch (IOException e) {
          // closed, or a probe that gave up
        }
      }
    }, "forger");
    t.setDaemon(true);
    t.start();
  }
}

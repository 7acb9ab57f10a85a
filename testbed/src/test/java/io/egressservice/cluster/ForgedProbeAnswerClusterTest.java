package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.allocator.AllocatorRunner;
import io.egressservice.allocator.HostHealth;
import io.egressservice.allocator.HostProbes;
import io.egressservice.health.ProbeIdentity;
import io.egressservice.health.ProbeKeys;
import io.egressservice.ip.IpFamily;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.metrics.ProbeMetrics;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.egressservice.testing.Privileges;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The namespace cluster with the real agents, proving their probe answers under a key of this test's, and the
 * allocator here probing them from the lan namespace with the same key. Another process answers about half of the
 * connections to the host's probe port (an nft redirect in the host's namespace, as a Service's externalIP or a
 * hostPort would take them), with 503 and another node's name in the identity header: without proofs those answers
 * counted as silence and drained the host within seconds; now they count as refused connections, and the real
 * agent's proofs among them keep the host.
 */
class ForgedProbeAnswerClusterTest {
  private static final int FAKE_PORT = 19464;

  private final List<AutoCloseable> toClose = new ArrayList<>();

  @AfterEach
  void tearDown() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  @Test
  void aForgedAnswerNamingAnotherNodeOnTheHostsPortDrainsNothing() throws Exception {
    Privileges.assumeNetAdmin();
    Path keyDir = Files.createTempDirectory("probe-key");
    byte[] random = new byte[48];
    new SecureRandom().nextBytes(random);
    Files.writeString(keyDir.resolve("key"), Base64.getEncoder().encodeToString(random));
    toClose.add(() -> {
      Files.delete(keyDir.resolve("key"));
      Files.delete(keyDir);
    });
    Cluster cluster = Cluster.standard().agentArgs("--allocator=false")
        .agentEnv("EGRESS_AGENT_PROBE_KEY_FILE", keyDir.resolve("key").toString()).start();
    toClose.add(cluster);
    ProbeKeys keys = ProbeKeys.fromFile(keyDir.resolve("key"), ProbeKeys.DEFAULT_RECHECK);
    AllocatorConfig config = AllocatorConfig.defaults().withLease(Duration.ofSeconds(4), Duration.ofSeconds(3),
        Duration.ofSeconds(1)).withProbes(new HostProbes(true, HostProbes.DEFAULT_PORT, Duration.ofMillis(500),
        Duration.ofSeconds(1), 4, Optional.of(cluster.netns("lan").name()), HostHealth.Settings.defaults())
        .withKeys(keys, HostProbes.ProofMode.REQUIRE));
    AllocatorMetrics metrics = new AllocatorMetrics();
    AllocatorRunner allocator = AllocatorRunner.start(cluster.api().client(), AgentProcess.LEASE_NAMESPACE,
        "allocator", config, metrics);
    toClose.add(allocator);
    cluster.api().createLoadBalancer("web", "172.30.0.10", "fd02::10",
        List.of(Addresses.lbIp(5, IpFamily.V4), Addresses.lbIp(5, IpFamily.V6)),
        List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1"), cluster.pod("pod-c1")));
    cluster.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "", Optional.empty());
    await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(100))
        .until(() -> cluster.api().host("web").filter(h -> !h.isEmpty()).isPresent());
    String host = cluster.api().host("web").orElseThrow();
    Cluster.Node node = cluster.node(host);
    String other = cluster.nodes().stream().map(Cluster.Node::name).filter(n -> !n.equals(host)).findFirst()
        .orElseThrow();
    String hostIp = node.ip(IpFamily.V4);

    forgeAnswers(node, "HTTP/1.1 503 Service Unavailable\r\n" + ProbeIdentity.NODE_HEADER + ": " + other
        + "\r\nContent-Length: 0\r\n\r\n");
    long end = System.nanoTime() + Duration.ofSeconds(6).toNanos();
    while (System.nanoTime() < end) {
      assertThat(cluster.api().host("web")).as("web's host while a forger answers on %s's port", host).hasValue(host);
      assertThat(allocator.allocator().unreachableNodes()).as("unreachable nodes").isEmpty();
      Thread.sleep(100);
    }
    assertThat(metrics.probes().unprovenCount(hostIp, ProbeMetrics.OTHER_NODE)).as("forged answers seen")
        .isGreaterThan(3);
  }

  /**
   * A server in {@code node}'s namespace on {@link #FAKE_PORT} answering {@code answer}, and half of the
   * connections to the probe port (at random) redirected to it.
   */
  private void forgeAnswers(Cluster.Node node, String answer) {
    NetnsThread inside = NetnsThread.enter(Optional.of(node.netns().name()));
    toClose.add(inside);
    ServerSocketChannel server = inside.call(() -> {
      ServerSocketChannel s = ServerSocketChannel.open();
      s.bind(new InetSocketAddress(FAKE_PORT), 64);
      return s;
    });
    toClose.add(server);
    Thread t = new Thread(() -> {
      while (server.isOpen()) {
        try (Socket c = server.accept().socket()) {
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
    node.netns().nft("table inet esa_test_forger {\n"
        + "  chain prerouting {\n"
        + "    type nat hook prerouting priority dstnat; policy accept;\n"
        + "    tcp dport " + HostProbes.DEFAULT_PORT + " numgen random mod 2 == 0 redirect to :" + FAKE_PORT + "\n"
        + "  }\n"
        + "}\n");
    toClose.add(() -> node.netns().tryExec("nft", "delete", "table", "inet", "esa_test_forger"));
  }
}

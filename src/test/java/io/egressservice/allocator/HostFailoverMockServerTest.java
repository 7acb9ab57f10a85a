package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.LEASE_NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * Failover through the real client, informers and leader election against the mock API server, with real health
 * servers on loopback addresses as the nodes' agents: node1 at 127.0.1.1, node2 at 127.0.1.2, same port; each
 * answers naming its node, as the agent does. A silent node is one whose SYNs go unanswered (its port's accept
 * queue is full, so the kernel drops them, as a powered-off node's go unanswered); a stalled agent is one whose
 * kernel completes the handshake but that never answers; a restarting agent is one whose port refuses connections.
 */
@EnableKubernetesMockClient(crud = true)
class HostFailoverMockServerTest {
  KubernetesMockServer server;
  KubernetesClient client;

  private MockCluster cluster;
  private int port;
  private final Map<Integer, FakeAgent> agents = new HashMap<>();
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    cluster = new MockCluster(client).crd();
    port = FakeAgent.freePort();
    for (int i = 1; i <= 2; i++) {
      node(i);
      agents.put(i, FakeAgent.answering(new InetSocketAddress("127.0.1." + i, port), "node" + i));
    }
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", 1, 2);
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
    for (FakeAgent a : agents.values()) {
      a.close();
    }
  }

  private void node(int i) {
    client.resource(new NodeBuilder()
        .withNewMetadata().withName("node" + i).endMetadata()
        .withNewSpec().withPodCIDR("10.128." + i + ".0/24").withPodCIDRs("10.128." + i + ".0/24").endSpec()
        .withNewStatus()
            .addNewAddress().withType("InternalIP").withAddress("127.0.1." + i).endAddress()
            .addNewCondition().withType("Ready").withStatus("True").endCondition()
        .endStatus().build()).create();
  }

  /** The agent of node i stops: connection refused. */
  private void stop(int i) {
    agents.get(i).stop();
  }

  /** The agent of node i answers /healthz with 200, naming its node. */
  private void healthy(int i) {
    agents.get(i).answer();
  }

  /** The agent of node i stalls (SIGSTOP, a long GC): the kernel completes handshakes, nothing answers. */
  private void stalled(int i) {
    agents.get(i).stall();
  }

  /** Node i is silent: its SYNs go unanswered, as a powered-off node's. */
  private void silent(int i) {
    agents.get(i).silence();
  }

  private AllocatorRunner runner() {
    AllocatorConfig config = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2),
        Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(30))
        .withProbes(new HostProbes(true, port, Duration.ofMillis(500), Duration.ofSeconds(1), 4, Optional.empty(),
            new HostHealth.Settings(2, Duration.ofSeconds(30), Duration.ofSeconds(1))));
    KubernetesClient own = server.createClient();
    AllocatorRunner r = AllocatorRunner.start(own, LEASE_NS, "allocator", config);
    toClose.add(own);
    toClose.add(0, r);
    return MockCluster.watching(r);
  }

  private void awaitHost(String node) {
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> cluster.host("web").equals(Optional.of(node)));
  }

  @Test
  void silentHostIsDrainedAndItsServiceMovesWithinThreeSeconds() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorRunner r = runner();
    awaitHost("node1");
    // let the probes of node1 start answering before it goes quiet
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().passes() > 0);
    Thread.sleep(1000);

    long t0 = System.nanoTime();
    silent(1);
    awaitHost("node2");
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertThat(seconds).as("node1 silent -> status.host node2").isLessThan(3.0);
    assertThat(r.allocator().unreachableNodes()).containsExactly("node1");
    assertThat(r.allocator().failoverSeconds()).hasSize(1).allSatisfy(s -> assertThat(s).as("last answer -> status written").isBetween(0.5, 3.0));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(cluster.events("web"))
        .anySatisfy(e -> assertThat(e.getMessage()).startsWith("moved from node node1 (unreachable")));
  }

  @Test
  void hostAgentRestartMovesNothing() throws Exception {
    cluster.egressService("web", null, null);
    runner();
    awaitHost("node1");
    Thread.sleep(1000);
    stop(1); // connection refused: the node is up, its agent restarts
    long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < end) {
      assertThat(cluster.host("web")).contains("node1");
      Thread.sleep(100);
    }
    healthy(1);
    Thread.sleep(1000);
    assertThat(cluster.host("web")).contains("node1");
  }

  @Test
  void aStalledHostAgentMovesNothing() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorRunner r = runner();
    awaitHost("node1");
    Thread.sleep(1000);
    stalled(1); // connections complete, nothing answers: the node is up, its agent is not answering
    long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < end) {
      assertThat(cluster.host("web")).contains("node1");
      Thread.sleep(100);
    }
    assertThat(r.allocator().unreachableNodes()).isEmpty();
  }

  @Test
  void aReturningNodeHostsAgainAfterRecoveringButServicesDoNotMoveBack() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorRunner r = runner();
    awaitHost("node1");
    Thread.sleep(1000);
    silent(1);
    awaitHost("node2");
    healthy(1);
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().unreachableNodes().isEmpty());
    Thread.sleep(1000);
    assertThat(cluster.host("web")).as("no move back").contains("node2");
    // node1 is eligible again: when node2 goes quiet, the service returns to it
    silent(2);
    awaitHost("node1");
  }
}

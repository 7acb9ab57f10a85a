package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.LEASE_NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AllocatorMetrics;
import io.fabric8.kubernetes.api.model.Event;
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
 * The allocator's own view of the nodes, through the real client, informers, leader election and probes against the
 * mock API server, with health servers on loopback addresses as the agents of node1..node3 (127.0.1.1..3, one
 * port), each answering naming its node. A silent node is one whose SYNs go unanswered ({@link FakeAgent#silence()}),
 * as a powered-off node's: not an agent that accepts and stalls, which the prober counts as the agent's failure. The service {@code web} has endpoints on every node and starts on node1; node2 and node3 host nothing, so
 * only the candidate probes look at them.
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorSelfSuspicionMockServerTest {
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
    for (int i = 1; i <= 3; i++) {
      client.resource(new NodeBuilder()
          .withNewMetadata().withName("node" + i).endMetadata()
          .withNewSpec().withPodCIDR("10.128." + i + ".0/24").withPodCIDRs("10.128." + i + ".0/24").endSpec()
          .withNewStatus()
              .addNewAddress().withType("InternalIP").withAddress("127.0.1." + i).endAddress()
              .addNewCondition().withType("Ready").withStatus("True").endCondition()
          .endStatus().build()).create();
      agents.put(i, FakeAgent.answering(new InetSocketAddress("127.0.1." + i, port), "node" + i));
    }
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", 1, 2, 3);
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

  private AllocatorRunner runner(String identity, AllocatorMetrics metrics) {
    AllocatorConfig config = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2),
        Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(30))
        .withProbes(new HostProbes(true, port, Duration.ofMillis(500), Duration.ofSeconds(1), 8, Optional.empty(),
            new HostHealth.Settings(2, Duration.ofSeconds(30), Duration.ofSeconds(1))));
    KubernetesClient own = server.createClient();
    AllocatorRunner r = AllocatorRunner.start(own, LEASE_NS, identity, config, metrics);
    toClose.add(own);
    toClose.add(0, r);
    return MockCluster.watching(r);
  }

  private void awaitHost(String node) {
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> cluster.host("web").equals(Optional.of(node)));
  }

  @Test
  void twoOfThreeNodesSilentAtOnceMoveNothingAndTheAllocatorSaysItSuspectsItself() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorMetrics metrics = new AllocatorMetrics();
    AllocatorRunner r = runner("allocator", metrics);
    awaitHost("node1");
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().probedNodes().size() == 3);
    Thread.sleep(1000);

    agents.get(1).silence();
    agents.get(2).silence();
    long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (System.nanoTime() < end) {
      assertThat(cluster.host("web")).as("status.host while node1 and node2 are silent").contains("node1");
      Thread.sleep(100);
    }
    assertThat(r.allocator().unreachableNodes()).isEmpty();
    assertThat(r.allocator().selfSuspected()).isTrue();
    assertThat(metrics.selfSuspicions()).isEqualTo(1);
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> {
      List<Event> events = client.v1().events().inNamespace(LEASE_NS).list().getItems();
      assertThat(events).anySatisfy(e -> {
        assertThat(e.getReason()).isEqualTo(SelfSuspicionEvents.SUSPECTED);
        assertThat(e.getInvolvedObject().getKind()).isEqualTo("Lease");
        assertThat(e.getMessage()).startsWith("2 of 3 probed nodes fail at once (node1, node2)");
      });
    });

    // node2 answers again, node1 stays silent: now it is node1's own failure, and it is drained
    agents.get(2).answer();
    awaitHost("node2");
    assertThat(r.allocator().unreachableNodes()).containsExactly("node1");
  }

  @Test
  void aFollowerKnowsTheHostIsGoneBeforeItLeads() throws Exception {
    cluster.egressService("web", null, null);
    AllocatorRunner first = runner("first", new AllocatorMetrics());
    await().atMost(Duration.ofSeconds(10)).until(first::isLeader);
    AllocatorRunner second = runner("second", new AllocatorMetrics());
    awaitHost("node1");
    await().atMost(Duration.ofSeconds(5)).until(() -> second.allocator().probedNodes().contains("node1"));
    Thread.sleep(1000);

    agents.get(1).silence();
    await().atMost(Duration.ofSeconds(5)).until(() -> second.allocator().unreachableNodes().contains("node1"));
    assertThat(second.isLeader()).as("the follower judged node1 while following").isFalse();
  }
}

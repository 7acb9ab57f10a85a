package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.LEASE_NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AllocatorMetrics;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

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

  @RegisterExtension
  final ProbedCluster probed = new ProbedCluster(3);

  private AllocatorRunner runner(String identity, AllocatorMetrics metrics) {
    return probed.runner(identity, probed.probing(8), metrics);
  }

  @Test
  void twoOfThreeNodesSilentAtOnceMoveNothingAndTheAllocatorSaysItSuspectsItself() throws Exception {
    probed.cluster().egressService("web", null, null);
    AllocatorMetrics metrics = new AllocatorMetrics();
    AllocatorRunner r = runner("allocator", metrics);
    probed.awaitHost("node1");
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().probedNodes().size() == 3);
    Thread.sleep(1000);

    probed.agent(1).silence();
    probed.agent(2).silence();
    long end = System.nanoTime() + Duration.ofSeconds(5).toNanos();
    while (System.nanoTime() < end) {
      assertThat(probed.cluster().host("web")).as("status.host while node1 and node2 are silent").contains("node1");
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
    probed.agent(2).answer();
    probed.awaitHost("node2");
    assertThat(r.allocator().unreachableNodes()).containsExactly("node1");
  }

  @Test
  void aFollowerKnowsTheHostIsGoneBeforeItLeads() throws Exception {
    probed.cluster().egressService("web", null, null);
    AllocatorRunner first = runner("first", new AllocatorMetrics());
    await().atMost(Duration.ofSeconds(10)).until(first::isLeader);
    AllocatorRunner second = runner("second", new AllocatorMetrics());
    probed.awaitHost("node1");
    await().atMost(Duration.ofSeconds(5)).until(() -> second.allocator().probedNodes().contains("node1"));
    Thread.sleep(1000);

    probed.agent(1).silence();
    await().atMost(Duration.ofSeconds(5)).until(() -> second.allocator().unreachableNodes().contains("node1"));
    assertThat(second.isLeader()).as("the follower judged node1 while following").isFalse();
  }
}

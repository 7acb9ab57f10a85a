package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AllocatorMetrics;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

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

  @RegisterExtension
  final ProbedCluster probed = new ProbedCluster(2);

  /** The agent of node i stops: connection refused. */
  private void stop(int i) {
    probed.agent(i).stop();
  }

  /** The agent of node i answers /healthz with 200, naming its node. */
  private void healthy(int i) {
    probed.agent(i).answer();
  }

  /** The agent of node i stalls (SIGSTOP, a long GC): the kernel completes handshakes, nothing answers. */
  private void stalled(int i) {
    probed.agent(i).stall();
  }

  /** Node i is silent: its SYNs go unanswered, as a powered-off node's. */
  private void silent(int i) {
    probed.agent(i).silence();
  }

  private AllocatorRunner runner() {
    return probed.runner("allocator", probed.probing(4), new AllocatorMetrics());
  }

  @Test
  void silentHostIsDrainedAndItsServiceMovesWithinThreeSeconds() throws Exception {
    probed.cluster().egressService("web", null, null);
    AllocatorRunner r = runner();
    probed.awaitHost("node1");
    // let the probes of node1 start answering before it goes quiet
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().passes() > 0);
    Thread.sleep(1000);

    long t0 = System.nanoTime();
    silent(1);
    probed.awaitHost("node2");
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertThat(seconds).as("node1 silent -> status.host node2").isLessThan(3.0);
    assertThat(r.allocator().unreachableNodes()).containsExactly("node1");
    // recorded once the status write has returned, which the test may see a moment before the allocator does
    await().atMost(Duration.ofSeconds(2)).untilAsserted(() -> assertThat(r.allocator().failoverSeconds()).hasSize(1)
        .allSatisfy(s -> assertThat(s).as("last answer -> status written").isBetween(0.5, 3.0)));
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(probed.cluster().events("web"))
        .anySatisfy(e -> assertThat(e.getMessage()).startsWith("moved from node node1 (unreachable")));
  }

  @Test
  void hostAgentRestartMovesNothing() throws Exception {
    probed.cluster().egressService("web", null, null);
    runner();
    probed.awaitHost("node1");
    Thread.sleep(1000);
    stop(1); // connection refused: the node is up, its agent restarts
    long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < end) {
      assertThat(probed.cluster().host("web")).contains("node1");
      Thread.sleep(100);
    }
    healthy(1);
    Thread.sleep(1000);
    assertThat(probed.cluster().host("web")).contains("node1");
  }

  @Test
  void aStalledHostAgentMovesNothing() throws Exception {
    probed.cluster().egressService("web", null, null);
    AllocatorRunner r = runner();
    probed.awaitHost("node1");
    Thread.sleep(1000);
    stalled(1); // connections complete, nothing answers: the node is up, its agent is not answering
    long end = System.nanoTime() + Duration.ofSeconds(4).toNanos();
    while (System.nanoTime() < end) {
      assertThat(probed.cluster().host("web")).contains("node1");
      Thread.sleep(100);
    }
    assertThat(r.allocator().unreachableNodes()).isEmpty();
  }

  @Test
  void aReturningNodeHostsAgainAfterRecoveringButServicesDoNotMoveBack() throws Exception {
    probed.cluster().egressService("web", null, null);
    AllocatorRunner r = runner();
    probed.awaitHost("node1");
    Thread.sleep(1000);
    silent(1);
    probed.awaitHost("node2");
    healthy(1);
    await().atMost(Duration.ofSeconds(5)).until(() -> r.allocator().unreachableNodes().isEmpty());
    Thread.sleep(1000);
    assertThat(probed.cluster().host("web")).as("no move back").contains("node2");
    // node1 is eligible again: when node2 goes quiet, the service returns to it
    silent(2);
    probed.awaitHost("node1");
  }
}

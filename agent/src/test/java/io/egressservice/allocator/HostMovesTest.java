package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.SourceIpBy;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * {@code egress_service_agent_host_moves_total{reason}}: counted when the allocator moves a service's
 * {@code status.host} from one node to another, with why the old host no longer qualified; a first host, a move to
 * or from ALL and losing every host are not moves.
 */
@EnableKubernetesMockClient(crud = true)
class HostMovesTest {
  private static final ObjectRef WEB = new ObjectRef("apps", "web");

  KubernetesMockServer server;
  KubernetesClient client;

  private static EgressServiceState lb(String host) {
    return new EgressServiceState(WEB, SourceIpBy.LOAD_BALANCER_IP, Optional.empty(), host, true);
  }

  private static NodeState node(String name, boolean ready, boolean cordoned, boolean deleting, Map<String, String> labels) {
    return new NodeState(name, labels, ready, cordoned, deleting, List.of(), List.of());
  }

  @Test
  void reasonIsTheFirstTestTheOldHostFails() {
    Map<String, NodeState> nodes = Map.of(
        "gone-not", node("gone-not", true, false, false, Map.of()),
        "deleting", node("deleting", true, false, true, Map.of()),
        "notready", node("notready", false, true, false, Map.of()),
        "cordoned", node("cordoned", true, true, false, Map.of()),
        "other", node("other", true, false, false, Map.of("zone", "b")));
    assertThat(HostMoves.reason(lb("vanished"), "other", nodes)).contains("node_gone");
    assertThat(HostMoves.reason(lb("deleting"), "other", nodes)).contains("node_deleting");
    assertThat(HostMoves.reason(lb("notready"), "other", nodes)).contains("node_not_ready");
    assertThat(HostMoves.reason(lb("cordoned"), "other", nodes)).contains("node_cordoned");
    assertThat(HostMoves.reason(lb("gone-not"), "other", nodes)).contains("no_endpoints");
    EgressServiceState selective = new EgressServiceState(WEB, SourceIpBy.LOAD_BALANCER_IP,
        Optional.of(new LabelSelectorBuilder().addToMatchLabels("zone", "b").build()), "gone-not", true);
    assertThat(HostMoves.reason(selective, "other", nodes)).contains("node_selector");
    assertThat(AllocatorMetrics.MOVE_REASONS)
        .containsExactly("node_gone", "node_deleting", "node_not_ready", "agent_unreachable", "node_cordoned",
            "node_selector", "no_endpoints");
  }

  @Test
  void firstHostAllAndNoHostAreNotMoves() {
    Map<String, NodeState> nodes = Map.of("a", node("a", true, false, false, Map.of()));
    assertThat(HostMoves.reason(lb(""), "a", nodes)).isEmpty();
    assertThat(HostMoves.reason(lb("a"), "", nodes)).isEmpty();
    assertThat(HostMoves.reason(lb("a"), "a", nodes)).isEmpty();
    assertThat(HostMoves.reason(lb("ALL"), "a", nodes)).isEmpty();
    assertThat(HostMoves.reason(lb("a"), "ALL", nodes)).isEmpty();
  }

  @Test
  void theAllocatorCountsEachMoveOnceWithItsReason() {
    MockCluster cluster = new MockCluster(client).crd();
    cluster.node(1, Map.of());
    cluster.node(2, Map.of());
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", 1, 2);
    cluster.egressService("web", null, null);
    AllocatorMetrics metrics = new AllocatorMetrics();
    AllocatorConfig fast = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2),
        Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(1));
    try (KubernetesClient own = server.createClient();
        AllocatorRunner runner = MockCluster.watching(AllocatorRunner.start(own, MockCluster.LEASE_NS, "a", fast, metrics))) {
      await().atMost(Duration.ofSeconds(10)).until(() -> cluster.host("web").equals(Optional.of("node1")));
      assertThat(runner.allocator().synced()).isTrue();
      await().atMost(Duration.ofSeconds(5)).until(() -> allocations(metrics)
          .equals(List.of("apps/web host=node1 HostAllocated")));
      assertThat(metrics.hostMoves("node_not_ready")).as("the first host is no move").isZero();

      cluster.setReady("node1", false);
      await().atMost(Duration.ofSeconds(10)).until(() -> cluster.host("web").equals(Optional.of("node2")));
      await().atMost(Duration.ofSeconds(5)).until(() -> metrics.hostMoves("node_not_ready") == 1);
      await().atMost(Duration.ofSeconds(5)).until(() -> allocations(metrics)
          .equals(List.of("apps/web host=node2 HostAllocated")));

      cluster.setReady("node1", true);
      await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(3))
          .until(() -> cluster.host("web").equals(Optional.of("node2")));
      cluster.endpoints("web", 1);
      await().atMost(Duration.ofSeconds(10)).until(() -> cluster.host("web").equals(Optional.of("node1")));
      await().atMost(Duration.ofSeconds(5)).until(() -> metrics.hostMoves("no_endpoints") == 1);
      // resyncs (every second) move nothing more
      await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(3)).until(() ->
          metrics.hostMoves("node_not_ready") == 1 && metrics.hostMoves("no_endpoints") == 1);

      runner.allocator().stopLeading();
      assertThat(allocations(metrics)).as("a follower exports no allocation").isEmpty();
    }
  }

  /** The egress_service_agent_service_allocation series of the registry, as "ns/name host=H Reason". */
  private static List<String> allocations(AllocatorMetrics metrics) {
    return metrics.registry().scrape().stream()
        .filter(s -> s.getMetadata().getName().equals("egress_service_agent_service_allocation"))
        .flatMap(s -> s.getDataPoints().stream())
        .map(p -> p.getLabels().get("service_namespace") + "/" + p.getLabels().get("service") + " host="
            + p.getLabels().get("host") + " " + p.getLabels().get("reason"))
        .sorted()
        .toList();
  }
}

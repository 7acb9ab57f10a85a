package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.LEASE_NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The allocator through the real fabric8 client, informers and leader election, against the mock API server in CRUD
 * mode (with our CRD registered, so status is a subresource).
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorMockServerTest {
  private static final String LABEL = "egress-service.k8s.ovn.org/" + MockCluster.NS + "-";
  private static final AllocatorConfig FAST = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME,
      Duration.ofSeconds(2), Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(1));

  KubernetesMockServer server;
  KubernetesClient client;

  private MockCluster cluster;
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @BeforeEach
  void setUp() {
    cluster = new MockCluster(client).crd();
  }

  @AfterEach
  void tearDown() throws Exception {
    for (AutoCloseable c : toClose) {
      c.close();
    }
  }

  private static ConditionFactory eventually() {
    return await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(50));
  }

  /** A runner with its own client, as a separate replica would have. */
  private AllocatorRunner runner(String identity) {
    KubernetesClient own = server.createClient();
    AllocatorRunner r = AllocatorRunner.start(own, LEASE_NS, identity, FAST);
    toClose.add(own);
    toClose.add(0, r);
    return MockCluster.watching(r);
  }

  @Test
  void statusHostWrittenAndLabelFollowsTheHost() {
    cluster.node(1, Map.of("team", "one"));
    cluster.node(2, Map.of("team", "two"));
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", 1);
    cluster.egressService("web", null, null);
    AllocatorRunner a = runner("a");

    eventually().until(() -> cluster.host("web").equals(Optional.of("node1")));
    eventually().until(() -> cluster.labels("node1").containsKey(LABEL + "web"));
    assertThat(cluster.labels("node1")).containsEntry(LABEL + "web", "").containsEntry("team", "one");
    assertThat(cluster.labels("node2")).isEqualTo(Map.of("team", "two"));

    // the only endpoint moves: the host and the label follow, other labels stay
    cluster.endpoints("web", 2);
    eventually().until(() -> cluster.host("web").equals(Optional.of("node2"))
        && cluster.labels("node2").containsKey(LABEL + "web") && !cluster.labels("node1").containsKey(LABEL + "web"));
    assertThat(cluster.labels("node1")).isEqualTo(Map.of("team", "one"));
    assertThat(cluster.labels("node2")).isEqualTo(Map.of("team", "two", LABEL + "web", ""));

    // host goes NotReady with endpoints on both: moves back
    cluster.endpoints("web", 1, 2);
    cluster.setReady("node2", false);
    eventually().until(() -> cluster.host("web").equals(Optional.of("node1"))
        && cluster.labels("node1").containsKey(LABEL + "web") && !cluster.labels("node2").containsKey(LABEL + "web"));
    eventually().until(() -> cluster.eventReasons("web").size() == 3);
    assertThat(cluster.eventReasons("web")).containsExactly("HostAllocated", "HostAllocated", "HostAllocated");
    assertThat(cluster.events("web")).allSatisfy(e -> {
      assertThat(e.getInvolvedObject().getKind()).isEqualTo("EgressService");
      assertThat(e.getInvolvedObject().getApiVersion()).isEqualTo("k8s.ovn.org/v1");
      assertThat(e.getReportingInstance()).isEqualTo("a");
    });

    // converged: resyncs (every second) write nothing and report nothing
    long writes = a.allocator().statusWrites();
    long patches = a.allocator().labelPatches();
    long passes = a.allocator().passes();
    await().during(Duration.ofMillis(2500)).atMost(Duration.ofSeconds(4)).until(() ->
        a.allocator().statusWrites() == writes && a.allocator().labelPatches() == patches
            && cluster.events("web").size() == 3);
    assertThat(a.allocator().passes()).as("resyncs did run").isGreaterThan(passes);
  }

  @Test
  void statusConflictIsRetried() {
    // The mock never answers 409 to a status PUT (MockServerQuirksTest), so one is injected.
    server.expect().put().withPath("/apis/k8s.ovn.org/v1/namespaces/apps/egressservices/web/status")
        .andReturn(409, new io.fabric8.kubernetes.api.model.StatusBuilder().withCode(409).withReason("Conflict")
            .withMessage("the object has been modified").build())
        .once();
    cluster.node(1, Map.of());
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", 1);
    cluster.egressService("web", null, null);
    AllocatorRunner a = runner("a");
    eventually().until(() -> cluster.host("web").equals(Optional.of("node1")));
    // the counters move after the write's response: the host can be visible a moment before them
    eventually().until(() -> a.allocator().statusWrites() >= 1);
    assertThat(a.allocator().statusWrites()).isEqualTo(1);
    assertThat(a.allocator().statusConflicts()).isEqualTo(1);
  }

  @Test
  void networkModeIsAllAndLabelsNothing() {
    cluster.node(1, Map.of());
    cluster.egressService("net", SourceIPBy.NETWORK, null);
    runner("a");
    eventually().until(() -> cluster.host("net").equals(Optional.of("ALL")));
    eventually().until(() -> cluster.eventReasons("net").equals(List.of("AllNodes")));
    assertThat(cluster.labels("node1")).isEmpty();
  }

  @Test
  void unallocatableServicesGetEmptyHostAndOneWarningEach() {
    cluster.node(1, Map.of("zone", "a"));
    cluster.lbService("pending"); // no ingress IP yet
    cluster.endpoints("pending", 1);
    cluster.egressService("pending", SourceIPBy.LOADBALANCERIP, null);
    cluster.lbService("badsel", "203.0.113.6");
    cluster.endpoints("badsel", 1);
    cluster.egressService("badsel", null, new LabelSelectorBuilder().addToMatchLabels("a:b", "c&").build());
    runner("a");
    eventually().until(() -> cluster.host("pending").equals(Optional.of(""))
        && cluster.host("badsel").equals(Optional.of("")));
    eventually().until(() -> cluster.eventReasons("pending").equals(List.of("NoIngressIP"))
        && cluster.eventReasons("badsel").equals(List.of("InvalidNodeSelector")));
    assertThat(cluster.events("badsel").get(0).getType()).isEqualTo("Warning");

    // the load balancer assigns an IP: allocated, one more Event
    cluster.lbService("pending", "203.0.113.7");
    eventually().until(() -> cluster.host("pending").equals(Optional.of("node1")));
    eventually().until(() -> cluster.eventReasons("pending").equals(List.of("NoIngressIP", "HostAllocated")));
    // the label patch follows the status write and its Event: wait for it too
    eventually().untilAsserted(() -> assertThat(cluster.labels("node1")).containsOnlyKeys("zone", LABEL + "pending"));
  }

  @Test
  void labelNameTooLongAllocatesAnywayAndReportsLabelNotSet() {
    String name = "a-service-name-that-is-long-enough-to-overflow-the-label-name";
    cluster.node(1, Map.of());
    cluster.lbService(name, "203.0.113.5");
    cluster.endpoints(name, 1);
    cluster.egressService(name, null, null);
    runner("a");
    eventually().until(() -> cluster.host(name).equals(Optional.of("node1")));
    eventually().until(() -> cluster.eventReasons(name).equals(List.of("HostAllocated", "LabelNotSet")));
    assertThat(cluster.labels("node1")).isEmpty();
  }

  @Test
  void onlyTheLeaderWritesAndTheOtherTakesOverWithoutFlapping() {
    cluster.node(1, Map.of());
    cluster.node(2, Map.of());
    cluster.node(3, Map.of());
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", 2, 3);
    cluster.egressService("web", null, null);

    AllocatorRunner a = runner("a");
    eventually().until(() -> cluster.leaseHolder().equals(Optional.of("a")) && a.isLeader());
    AllocatorRunner b = runner("b");
    eventually().until(() -> cluster.host("web").equals(Optional.of("node2")));
    eventually().until(() -> b.observedLeader().equals(Optional.of("a")));

    // changes while a leads are written by a only
    cluster.lbService("api", "203.0.113.6");
    cluster.endpoints("api", 2, 3);
    cluster.egressService("api", null, null);
    eventually().until(() -> cluster.host("api").equals(Optional.of("node3")));
    eventually().until(() -> cluster.labels("node3").containsKey(LABEL + "api"));
    assertThat(b.isLeader()).isFalse();
    assertThat(b.allocator().passes()).isZero();
    assertThat(b.allocator().statusWrites()).isZero();
    assertThat(b.allocator().labelPatches()).isZero();
    assertThat(a.allocator().statusWrites()).isEqualTo(2);
    assertThat(cluster.events("web")).extracting(e -> e.getReportingInstance()).containsExactly("a");
    assertThat(cluster.leaseHolder()).contains("a");

    // a goes away (releasing the Lease): b takes over, finds everything converged, writes nothing
    a.close();
    eventually().until(() -> cluster.leaseHolder().equals(Optional.of("b")) && b.isLeader());
    eventually().until(() -> b.allocator().passes() > 0);
    await().during(Duration.ofMillis(2500)).atMost(Duration.ofSeconds(4)).until(() ->
        cluster.host("web").equals(Optional.of("node2")) && cluster.host("api").equals(Optional.of("node3")));
    assertThat(b.allocator().statusWrites()).isZero();
    assertThat(b.allocator().labelPatches()).isZero();
    assertThat(b.allocator().eventsWritten()).isZero();
    assertThat(cluster.labels("node2")).containsOnlyKeys(LABEL + "web");
    assertThat(cluster.labels("node3")).containsOnlyKeys(LABEL + "api");

    // and b now does the work
    cluster.setReady("node2", false);
    eventually().until(() -> cluster.host("web").equals(Optional.of("node3")));
    eventually().until(() -> cluster.labels("node3").containsKey(LABEL + "web")
        && !cluster.labels("node2").containsKey(LABEL + "web"));
    assertThat(b.allocator().statusWrites()).isEqualTo(1);
    assertThat(cluster.events("web")).extracting(e -> e.getReportingInstance()).containsExactlyInAnyOrder("a", "b");
  }
}

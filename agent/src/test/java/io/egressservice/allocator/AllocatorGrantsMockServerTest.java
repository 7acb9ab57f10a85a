package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.LEASE_NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.FileInputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.awaitility.core.ConditionFactory;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/**
 * The allocator refuses a host to what no agent may configure: a service the enforced EgressServicePolicy does not
 * grant, and the younger of two services with one host label. Such a service gets {@code status.host: ""}, no node
 * label (a label it had is removed) and an Event saying why; the allowed ones keep theirs.
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorGrantsMockServerTest {
  private static final String PREFIX = "egress-service.k8s.ovn.org/";
  private static final AllocatorConfig FAST = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME,
      Duration.ofSeconds(2), Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(1));
  private static final ResourceDefinitionContext POLICIES = new ResourceDefinitionContext.Builder()
      .withGroup("egressservice.io").withVersion("v1alpha1").withKind("EgressServicePolicy")
      .withPlural("egressservicepolicies").withNamespaced(false).build();

  KubernetesMockServer server;
  KubernetesClient client;

  private MockCluster cluster;
  private final List<AutoCloseable> toClose = new ArrayList<>();

  @BeforeEach
  void setUp() throws Exception {
    cluster = new MockCluster(client).crd();
    try (FileInputStream in = new FileInputStream("crds/egressservicepolicies.egressservice.io.yaml")) {
      CustomResourceDefinition crd = client.apiextensions().v1().customResourceDefinitions().load(in).item();
      client.resource(crd).create();
    }
    cluster.node(1, Map.of());
    cluster.node(2, Map.of());
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

  private AllocatorRunner runner(AllocatorConfig config) {
    KubernetesClient own = server.createClient();
    AllocatorRunner r = AllocatorRunner.start(own, LEASE_NS, "a", config);
    toClose.add(own);
    toClose.add(0, r);
    return MockCluster.watching(r);
  }

  private void namespace(String name, Map<String, String> labels) {
    client.resource(new NamespaceBuilder().withNewMetadata().withName(name).withLabels(labels).endMetadata().build())
        .createOr(existing -> existing.update());
  }

  /** A LoadBalancerIP service {@code ns/name} with one endpoint on node{@code node}, and its EgressService. */
  private void service(String ns, String name, String network, int node, String created) {
    client.resource(new ServiceBuilder().withNewMetadata().withNamespace(ns).withName(name).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP("172.30.0." + node).addToSelector("app", name).endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp("203.0.113." + node).endIngress()
        .endLoadBalancer().endStatus().build()).create();
    client.resource(new EndpointSliceBuilder().withNewMetadata().withNamespace(ns).withName(name + "-abcde")
        .addToLabels("kubernetes.io/service-name", name)
        .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4")
        .addToEndpoints(new EndpointBuilder().withAddresses("10.128." + node + ".10").withNodeName("node" + node).build())
        .build()).create();
    EgressService es = new EgressService();
    es.getMetadata().setNamespace(ns);
    es.getMetadata().setName(name);
    es.getMetadata().setCreationTimestamp(created);
    EgressServiceSpec spec = new EgressServiceSpec();
    spec.setNetwork(network);
    es.setSpec(spec);
    client.resource(es).create();
  }

  private Optional<String> host(String ns, String name) {
    EgressService es = client.resources(EgressService.class).inNamespace(ns).withName(name).get();
    return es == null || es.getStatus() == null ? Optional.empty() : Optional.ofNullable(es.getStatus().getHost());
  }

  private List<String> eventMessages(String ns, String name, String reason) {
    return client.v1().events().inNamespace(ns).list().getItems().stream()
        .filter(e -> name.equals(e.getInvolvedObject().getName()) && reason.equals(e.getReason()))
        .map(io.fabric8.kubernetes.api.model.Event::getMessage).toList();
  }

  private void policy(List<Map<String, Object>> grants) {
    GenericKubernetesResource p = new GenericKubernetesResourceBuilder().withApiVersion("egressservice.io/v1alpha1")
        .withKind("EgressServicePolicy").withNewMetadata().withName("cluster").endMetadata().build();
    p.setAdditionalProperty("spec", Map.of("grants", grants));
    client.genericKubernetesResources(POLICIES).resource(p).createOr(existing -> existing.update());
  }

  @Test
  void aServiceOutsideItsGrantGetsNoHostNoLabelAndAnEventWhileAGrantedOneIsHosted() {
    namespace("shop", Map.of("team", "shop"));
    policy(List.of(Map.of("namespaceSelector", Map.of("matchLabels", Map.of("team", "shop")),
        "networks", List.of("1337"))));
    service("shop", "web", "1337", 1, "2026-01-01T00:00:00Z");
    service("shop", "mgmt", "99", 2, "2026-01-01T00:00:00Z");
    runner(FAST.withGrantPolicy(true));

    eventually().until(() -> host("shop", "web").equals(Optional.of("node1"))
        && cluster.labels("node1").containsKey(PREFIX + "shop-web"));
    eventually().until(() -> !eventMessages("shop", "mgmt", "NotGranted").isEmpty());
    assertThat(eventMessages("shop", "mgmt", "NotGranted").get(0)).contains("namespace 'shop'")
        .contains("network '99'").contains("listing '99'");
    assertThat(host("shop", "mgmt")).isEqualTo(Optional.of(""));
    assertThat(cluster.labels("node2")).doesNotContainKey(PREFIX + "shop-mgmt");

    // the namespace loses the label the grant selects by: its service loses host and label
    namespace("shop", Map.of("team", "elsewhere"));
    eventually().until(() -> host("shop", "web").equals(Optional.of(""))
        && !cluster.labels("node1").containsKey(PREFIX + "shop-web"));
    assertThat(eventMessages("shop", "web", "NotGranted")).isNotEmpty();
  }

  @Test
  void theOlderHolderOfAHostLabelKeepsItsHostAndTheYoungerGetsNone() {
    service("team-a", "web", "", 1, null);
    runner(FAST);
    eventually().until(() -> host("team-a", "web").equals(Optional.of("node1"))
        && cluster.labels("node1").containsKey(PREFIX + "team-a-web"));
    // The API server stamps creationTimestamp in whole seconds: the attacker comes a second later, so it is younger.
    java.time.Instant victimCreated = java.time.Instant.parse(client.resources(EgressService.class)
        .inNamespace("team-a").withName("web").get().getMetadata().getCreationTimestamp());
    await().atMost(Duration.ofSeconds(3)).until(() -> java.time.Instant.now().minusSeconds(1).isAfter(victimCreated));
    service("team", "a-web", "", 2, null);

    eventually().until(() -> !eventMessages("team", "a-web", "HostLabelTaken").isEmpty());
    assertThat(eventMessages("team", "a-web", "HostLabelTaken").get(0)).contains("'team-a/web'");
    assertThat(host("team", "a-web")).isEqualTo(Optional.of(""));
    assertThat(cluster.labels("node2")).doesNotContainKey(PREFIX + "team-a-web");
    assertThat(cluster.labels("node1")).containsKey(PREFIX + "team-a-web");

    // the older one goes: the younger gets its host, and the label moves with it
    client.resources(EgressService.class).inNamespace("team-a").withName("web").delete();
    eventually().until(() -> host("team", "a-web").equals(Optional.of("node2"))
        && cluster.labels("node2").containsKey(PREFIX + "team-a-web")
        && !cluster.labels("node1").containsKey(PREFIX + "team-a-web"));
  }
}

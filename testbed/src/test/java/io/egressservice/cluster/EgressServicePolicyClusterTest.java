package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.ApiServer;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.api.model.NamespaceBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/**
 * Tenancy on the namespace cluster, with the real agents (their allocator inside, {@code --egress-service-policy
 * =enforce}) and real packets: network 100 (uplink 2 of every node) is granted to namespace shop only. An
 * EgressService of namespace intruder on network 100 is refused: no host, no {@code from <pod> lookup 100} rule on
 * any node, its pod's packets never leave through an uplink 2, and an Event says why; shop's own service on 100
 * leaves through node-a's uplink 2 with its LB IP. And a host-label collision: of shop-a/web and the younger
 * shop/a-web (both label {@code egress-service.k8s.ovn.org/shop-a-web}), the older keeps its host and label.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class EgressServicePolicyClusterTest {
  private static final Duration PATIENCE = Duration.ofSeconds(20);
  private static final ResourceDefinitionContext POLICIES = new ResourceDefinitionContext.Builder()
      .withGroup("egressservice.io").withVersion("v1alpha1").withKind("EgressServicePolicy")
      .withPlural("egressservicepolicies").withNamespaced(false).build();

  @RegisterExtension
  static final PerClass<Cluster> cluster = new PerClass<>(() -> {
    Cluster c = Cluster.builder().node("node-a", 2, 2).node("node-b", 2, 2)
        .agentArgs("--egress-service-policy", "enforce").start();
    KubernetesClient client = c.api().client();
    client.resource(new NamespaceBuilder().withNewMetadata().withName(ApiServer.NAMESPACE)
        .addToLabels("team", "shop").endMetadata().build()).createOr(existing -> existing.update());
    GenericKubernetesResource policy = new GenericKubernetesResourceBuilder()
        .withApiVersion("egressservice.io/v1alpha1").withKind("EgressServicePolicy")
        .withNewMetadata().withName("cluster").endMetadata().build();
    policy.setAdditionalProperty("spec", Map.of("grants", List.of(
        Map.of("namespaceSelector", Map.of("matchLabels", Map.of("team", "shop")), "networks", List.of("100")),
        Map.of("namespaceSelector", Map.of("matchLabels", Map.of("kubernetes.io/metadata.name", "shop-a"))))));
    client.genericKubernetesResources(POLICIES).resource(policy).create();
    return c;
  });

  private static Cluster c() {
    return cluster.get();
  }

  /** A LoadBalancer Service and EgressService {@code ns/name} (any namespace) with {@code pod} as its endpoint. */
  private static void service(String ns, String name, String network, int lb, String pod) {
    KubernetesClient client = c().api().client();
    Cluster.Pod p = c().pod(pod);
    client.services().resource(new ServiceBuilder().withNewMetadata().withName(name).withNamespace(ns).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP("172.30.0." + (20 + lb))
          .addNewPort().withName("http").withPort(80).withProtocol("TCP").endPort().addToSelector("app", name).endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp(Addresses.lbIp(lb, IpFamily.V4)).endIngress()
          .endLoadBalancer().endStatus().build()).create();
    client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder()
        .withNewMetadata().withName(name + "-v4").withNamespace(ns)
          .addToLabels("kubernetes.io/service-name", name)
          .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4")
        .addToEndpoints(new EndpointBuilder().withAddresses(p.ip(IpFamily.V4)).withNodeName(p.node())
          .withNewConditions().withReady(true).endConditions()
          .withNewTargetRef().withKind("Pod").withNamespace(ns).withName(pod).endTargetRef().build())
        .build()).create();
    EgressService es = new EgressService();
    es.getMetadata().setName(name);
    es.getMetadata().setNamespace(ns);
    EgressServiceSpec spec = new EgressServiceSpec();
    spec.setNetwork(network.isEmpty() ? null : network);
    es.setSpec(spec);
    client.resources(EgressService.class).resource(es).create();
  }

  private static Optional<String> host(String ns, String name) {
    EgressService es = c().api().client().resources(EgressService.class).inNamespace(ns).withName(name).get();
    return es == null || es.getStatus() == null ? Optional.empty()
        : Optional.ofNullable(es.getStatus().getHost()).filter(h -> !h.isEmpty());
  }

  private static List<String> events(String ns, String name, String reason) {
    return c().api().client().v1().events().inNamespace(ns).list().getItems().stream()
        .filter(e -> name.equals(e.getInvolvedObject().getName()) && reason.equals(e.getReason()))
        .map(Event::getMessage).toList();
  }

  private static boolean ruleFrom(String node, String address) {
    return c().node(node).netns().json("ip", "-j", "rule", "show").findValues("src").stream()
        .anyMatch(src -> src.asText().equals(address));
  }

  @Test
  void aNamespaceWithoutAGrantForItsNetworkIsRefusedWhileTheGrantedOneLeavesThroughIt() {
    service(ApiServer.NAMESPACE, "web", "100", 5, "pod-a1");
    service("intruder", "api", "100", 6, "pod-b1");
    String lbWeb = Addresses.lbIp(5, IpFamily.V4);
    String lbApi = Addresses.lbIp(6, IpFamily.V4);

    await().atMost(PATIENCE).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
      Probe p = c().traffic().udp("pod-a1", Addresses.external(IpFamily.V4));
      assertThat(p.seen()).as("shop/web's pod").containsExactly(new Seen("ext-a2", "udp", lbWeb));
    });
    await().atMost(PATIENCE).until(() -> !events("intruder", "api", "NotGranted").isEmpty());
    assertThat(events("intruder", "api", "NotGranted").get(0)).contains("namespace 'intruder'")
        .contains("network '100'");
    assertThat(host("intruder", "api")).isEmpty();
    String podB1 = c().pod("pod-b1").ip(IpFamily.V4);
    for (String node : List.of("node-a", "node-b")) {
      assertThat(ruleFrom(node, podB1)).as("a rule from intruder/api's pod on %s", node).isFalse();
    }
    Probe intruder = c().traffic().udp("pod-b1", Addresses.external(IpFamily.V4));
    assertThat(intruder.seen()).as("intruder/api's pod leaves as before, never through network 100").isNotEmpty()
        .noneMatch(s -> s.where().endsWith("2") || s.source().equals(lbApi));
  }

  @Test
  void ofTwoServicesWithOneHostLabelTheOlderKeepsItsHostAndLabel() {
    String label = "egress-service.k8s.ovn.org/shop-a-web";
    service("shop-a", "web", "", 7, "pod-a2");
    await().atMost(PATIENCE).until(() -> host("shop-a", "web").equals(Optional.of("node-a"))
        && c().api().labels("node-a").containsKey(label));
    // creationTimestamp has whole seconds: the attacker comes at least a second later, so it is the younger one
    Instant victimCreated = Instant.parse(c().api().client().resources(EgressService.class).inNamespace("shop-a")
        .withName("web").get().getMetadata().getCreationTimestamp());
    await().atMost(Duration.ofSeconds(3)).until(() -> Instant.now().minusSeconds(1).isAfter(victimCreated));
    service(ApiServer.NAMESPACE, "a-web", "", 8, "pod-b2");

    await().atMost(PATIENCE).until(() -> !events(ApiServer.NAMESPACE, "a-web", "HostLabelTaken").isEmpty());
    assertThat(events(ApiServer.NAMESPACE, "a-web", "HostLabelTaken").get(0)).contains("'shop-a/web'");
    assertThat(host(ApiServer.NAMESPACE, "a-web")).isEmpty();
    assertThat(host("shop-a", "web")).contains("node-a");
    assertThat(c().api().labels("node-a")).containsKey(label);
    assertThat(c().api().labels("node-b")).doesNotContainKey(label);
    String lb = Addresses.lbIp(7, IpFamily.V4);
    Probe victim = c().traffic().udp("pod-a2", Addresses.external(IpFamily.V4));
    assertThat(victim.seen()).as("the victim's pod still leaves with its LB IP").extracting(Seen::source)
        .containsExactly(lb);
    Probe attacker = c().traffic().udp("pod-b2", Addresses.external(IpFamily.V4));
    assertThat(attacker.seen()).extracting(Seen::source).doesNotContain(Addresses.lbIp(8, IpFamily.V4));
  }
}

package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.objects.EgressServices;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.EndpointTrust;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Endpoint trust through the real client, informers and lean caches into a kernel: the attacker's hand-made
 * slices (an untrusted manager; a trusted one naming a Pod of another namespace) give it nothing, the refusal is
 * an Event on its EgressService, and the victim's later opt-in takes its pods.
 */
@EnableKubernetesMockClient(crud = true)
class EndpointTrustAgentTest {
  static final String NODE = "node-a";
  static final Duration WAIT = Duration.ofSeconds(15);

  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("hijack");

  void lbService(String namespace, String name, String clusterIp, String lbIp, boolean selector) {
    ServiceBuilder b = new ServiceBuilder()
        .withNewMetadata().withName(name).withNamespace(namespace).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP(clusterIp).withClusterIPs(clusterIp).endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp(lbIp).endIngress().endLoadBalancer().endStatus();
    if (selector) {
      b.editSpec().addToSelector("app", name).endSpec();
    }
    client.services().resource(b.build()).create();
  }

  /** A slice of {@code namespace/service} by {@code manager}, each endpoint a Pod of {@code podNamespace}. */
  void slice(String namespace, String service, String sliceName, String manager, String podNamespace,
      String... addresses) {
    EndpointSlice s = new EndpointSliceBuilder()
        .withNewMetadata().withName(sliceName).withNamespace(namespace)
          .addToLabels("kubernetes.io/service-name", service)
          .addToLabels(EndpointSliceInfo.MANAGED_BY_LABEL, manager).endMetadata()
        .withAddressType("IPv4")
        .withEndpoints(List.of(addresses).stream().map(a -> new EndpointBuilder().withAddresses(a).withNodeName(NODE)
            .withNewTargetRef().withKind("Pod").withNamespace(podNamespace).withName("pod-" + a).endTargetRef()
            .build()).toList())
        .build();
    client.discovery().v1().endpointSlices().resource(s).create();
  }

  List<Event> events(String namespace, String reason) {
    return client.v1().events().inNamespace(namespace).list().getItems().stream()
        .filter(e -> reason.equals(e.getReason())).toList();
  }

  @Test
  void theAttackersSlicesAreRefusedWithAnEventAndTheVictimsLaterOptInTakesItsPods() {
    // The admin trusts kube-vip for selector-less Services; the attacker's other slice has a manager of its own.
    PlanConfig config = PlanConfig.defaults().withEndpointTrust(new EndpointTrust(Set.of("kube-vip")));
    NodeAgent agent = kernel.start(new NodeAgent.Settings(NODE, config, Duration.ofMinutes(10), Duration.ofSeconds(2)),
        new AgentMetrics());

    lbService("evil", "grab", "172.30.0.66", "6.6.6.6", false);
    slice("evil", "grab", "grab-1", "evil-controller", "shop", "10.128.0.7");
    slice("evil", "grab", "grab-2", "kube-vip", "shop", "10.128.0.8");
    slice("evil", "grab", "grab-3", "kube-vip", "evil", "10.128.0.66");
    client.resources(EgressService.class)
        .resource(EgressServices.of("evil", "grab", SourceIPBy.LOADBALANCERIP, "", NODE)).create();

    // Only the attacker's own pod, listed by a trusted manager, is the attacker's.
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat()).contains("10.128.0.66 comment \"evil/grab\" : 6.6.6.6"));
    assertThat(kernel.snat()).doesNotContain("10.128.0.7").doesNotContain("10.128.0.8");
    // (one Event per change of the refusals: the slices may arrive one by one)
    await().atMost(WAIT).untilAsserted(() -> assertThat(events("evil", "EndpointsRefused"))
        .anySatisfy(e -> assertThat(e.getMessage()).contains("refuses 2 endpoint(s)")
            .contains("10.128.0.7 (EndpointSlice evil/grab-1 is managed by 'evil-controller'")
            .contains("10.128.0.8 (its targetRef is a Pod of namespace shop")));

    // The victim opts in later; the attacker's older EgressService claimed nothing of it.
    lbService("shop", "web", "172.30.0.10", "5.5.5.5", true);
    slice("shop", "web", "web-abcde", EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER, "shop", "10.128.0.7", "10.128.0.8");
    client.resources(EgressService.class)
        .resource(EgressServices.of("shop", "web", SourceIPBy.LOADBALANCERIP, "", NODE)).create();

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat())
        .contains("10.128.0.7 comment \"shop/web\" : 5.5.5.5")
        .contains("10.128.0.8 comment \"shop/web\" : 5.5.5.5")
        .contains("10.128.0.66 comment \"evil/grab\" : 6.6.6.6"));
  }
}

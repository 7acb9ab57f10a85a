package io.egressservice.testing;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.UncheckedIOException;

/** The cluster objects that tests against fabric8's mock API server write before they start an agent. */
public final class MockApiObjects {
  private MockApiObjects() {}

  /** Registers our CRD, so the mock serves EgressService status as a subresource. */
  public static void installCrd(KubernetesClient client) {
    try (FileInputStream in = new FileInputStream("crds/egressservices.k8s.ovn.org.yaml")) {
      CustomResourceDefinition crd = client.apiextensions().v1().customResourceDefinitions().load(in).item();
      client.resource(crd).create();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  /** Node node-a with pod CIDR 10.128.0.0/24 and nothing else (no address, no conditions). */
  public static void bareNodeA(KubernetesClient client) {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("node-a").endMetadata()
        .withNewSpec().withPodCIDRs("10.128.0.0/24").endSpec().build()).create();
  }

  /** Node node-a: pod CIDR 10.128.0.0/24, InternalIP 192.168.1.10, Ready. */
  public static void readyNodeA(KubernetesClient client) {
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("node-a").endMetadata()
        .withNewSpec().withPodCIDRs("10.128.0.0/24").endSpec()
        .withNewStatus().addNewAddress().withType("InternalIP").withAddress("192.168.1.10").endAddress()
          .addNewCondition().withType("Ready").withStatus("True").endCondition().endStatus().build()).create();
  }

  /**
   * The LoadBalancer Service {@code default/name} (selector app={@code name}) at {@code clusterIp} and
   * {@code lbIp}, and its slice {@code name-1}, managed by the endpointslice controller, with the one IPv4
   * endpoint {@code podIp} on node-a.
   */
  public static void lbServiceOnNodeA(KubernetesClient client, String name, String clusterIp, String lbIp,
      String podIp) {
    client.services().resource(new ServiceBuilder().withNewMetadata().withName(name).withNamespace("default")
        .endMetadata().withNewSpec().withType("LoadBalancer").withClusterIP(clusterIp).addToSelector("app", name)
        .endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp(lbIp).endIngress().endLoadBalancer()
        .endStatus().build()).create();
    client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder().withNewMetadata()
        .withName(name + "-1").withNamespace("default").addToLabels("kubernetes.io/service-name", name)
        .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4").withEndpoints(new EndpointBuilder().withAddresses(podIp).withNodeName("node-a")
            .build()).build()).create();
  }
}

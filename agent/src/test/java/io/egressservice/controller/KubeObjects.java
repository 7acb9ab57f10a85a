package io.egressservice.controller;

import io.egressservice.objects.EgressServices;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import java.util.Arrays;
import java.util.List;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/** Kubernetes objects for controller tests, as a cluster would hold them. */
final class KubeObjects {
  static final String NS = "default";

  private KubeObjects() {}

  static EgressService egressService(String name, EgressServiceSpec.SourceIPBy mode, String network, String host) {
    return EgressServices.of(NS, name, mode, network, host);
  }

  static Service lbService(String name, String clusterIp, String lbIp) {
    return new ServiceBuilder()
        .withNewMetadata().withName(name).withNamespace(NS).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP(clusterIp).withClusterIPs(clusterIp)
          .addToSelector("app", name).endSpec()
        .withNewStatus().withNewLoadBalancer().addNewIngress().withIp(lbIp).endIngress().endLoadBalancer().endStatus()
        .build();
  }

  static EndpointSlice slice(String service, String sliceName, String node, String... addresses) {
    return new EndpointSliceBuilder()
        .withNewMetadata().withName(sliceName).withNamespace(NS)
          .addToLabels("kubernetes.io/service-name", service)
          .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4")
        .withEndpoints(Arrays.stream(addresses)
            .map(a -> new EndpointBuilder().withAddresses(a).withNodeName(node).build()).toList())
        .build();
  }

  static Node node(String name, String address, String podCidr) {
    return new NodeBuilder()
        .withNewMetadata().withName(name).endMetadata()
        .withNewSpec().withPodCIDR(podCidr).withPodCIDRs(List.of(podCidr)).endSpec()
        .withNewStatus().addNewAddress().withType("InternalIP").withAddress(address).endAddress().endStatus()
        .build();
  }
}

package io.egressservice.allocator;

import static org.awaitility.Awaitility.await;

import io.egressservice.testing.MockApiObjects;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/** Writes cluster objects into the mock API server the way a cluster would hold them. */
final class MockCluster {
  static final String NS = "apps";
  static final String LEASE_NS = "egress-system";

  private final KubernetesClient client;

  MockCluster(KubernetesClient client) {
    this.client = client;
  }

  /**
   * Returns {@code runner} once its informers watch. The mock API server keeps no watch history, so a change
   * made between an informer's list and its watch is never delivered (a real API server replays it from the
   * list's resourceVersion); a test changes nothing before the watches are open. A cold JVM (the suite's first
   * test on the mock server) has taken more than a second to open them.
   */
  static AllocatorRunner watching(AllocatorRunner runner) {
    await().atMost(Duration.ofSeconds(30))
        .pollInterval(Duration.ofMillis(20))
        .until(() -> runner.allocator().watching());
    return runner;
  }

  /** Registers our CRD, so the mock serves EgressService status as a subresource. */
  MockCluster crd() {
    MockApiObjects.installCrd(client);
    return this;
  }

  /** Node {@code node<i>}: Ready, address 192.168.0.i, pod CIDR 10.128.i.0/24, plus {@code labels}. */
  Node node(int i, Map<String, String> labels) {
    return node(i, labels, true);
  }

  Node node(int i, Map<String, String> labels, boolean ready) {
    Node n = new NodeBuilder()
        .withNewMetadata().withName("node" + i).withLabels(labels).endMetadata()
        .withNewSpec().withPodCIDR("10.128." + i + ".0/24").withPodCIDRs("10.128." + i + ".0/24").endSpec()
        .withNewStatus()
            .addNewAddress().withType("InternalIP").withAddress("192.168.0." + i).endAddress()
            .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition()
        .endStatus()
        .build();
    return client.resource(n).createOr(existing -> existing.update());
  }

  Node setReady(String name, boolean ready) {
    Node n = client.nodes().withName(name).get();
    n.getStatus().getConditions().stream().filter(c -> "Ready".equals(c.getType()))
        .forEach(c -> c.setStatus(ready ? "True" : "False"));
    return client.resource(n).updateStatus();
  }

  Service lbService(String name, String... ingressIps) {
    ServiceBuilder b = new ServiceBuilder()
        .withNewMetadata().withNamespace(NS).withName(name).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP("172.30.0.10").addToSelector("app", name).endSpec()
        .withNewStatus().withNewLoadBalancer().endLoadBalancer().endStatus();
    for (String ip : ingressIps) {
      b.editStatus().editLoadBalancer().addNewIngress().withIp(ip).endIngress().endLoadBalancer().endStatus();
    }
    return client.resource(b.build()).createOr(existing -> existing.update());
  }

  /** The service's only EndpointSlice: one pod endpoint per entry of {@code nodeIndexes} (10.128.i.(10+k)). */
  EndpointSlice endpoints(String service, int... nodeIndexes) {
    EndpointSliceBuilder b = new EndpointSliceBuilder()
        .withNewMetadata().withNamespace(NS).withName(service + "-abcde")
            .addToLabels("kubernetes.io/service-name", service)
            .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4");
    for (int k = 0; k < nodeIndexes.length; k++) {
      int i = nodeIndexes[k];
      b.addToEndpoints(new EndpointBuilder().withAddresses("10.128." + i + "." + (10 + k)).withNodeName("node" + i)
          .build());
    }
    return client.resource(b.build()).createOr(existing -> existing.update());
  }

  EgressService egressService(String name, EgressServiceSpec.SourceIPBy mode, LabelSelector selector) {
    EgressService es = new EgressService();
    es.getMetadata().setNamespace(NS);
    es.getMetadata().setName(name);
    EgressServiceSpec spec = new EgressServiceSpec();
    spec.setSourceIPBy(mode);
    spec.setNodeSelector(selector);
    es.setSpec(spec);
    return client.resource(es).create();
  }

  /** {@code status.host}, or empty when there is no status. */
  Optional<String> host(String name) {
    EgressService es = client.resources(EgressService.class).inNamespace(NS).withName(name).get();
    return es == null || es.getStatus() == null ? Optional.empty() : Optional.ofNullable(es.getStatus().getHost());
  }

  /**
   * The node's labels, without keys whose value is null: the mock's JSON merge patch stores {@code "k": null}
   * instead of removing the key (see MockServerQuirksTest); a real API server removes it.
   */
  Map<String, String> labels(String node) {
    Map<String, String> labels = client.nodes().withName(node).get().getMetadata().getLabels();
    return new NodeState(node, labels, true, false, false, List.of(), List.of()).labels();
  }

  List<Event> events(String esName) {
    return client.v1().events().inNamespace(NS).list().getItems().stream()
        .filter(e -> esName.equals(e.getInvolvedObject().getName()))
        .toList();
  }

  List<String> eventReasons(String esName) {
    return events(esName).stream()
        .sorted(java.util.Comparator.comparingLong(e -> Long.parseLong(e.getMetadata().getResourceVersion())))
        .map(Event::getReason).toList();
  }

  Optional<String> leaseHolder() {
    Lease l = client.leases().inNamespace(LEASE_NS).withName(AllocatorConfig.DEFAULT_LEASE_NAME).get();
    return l == null || l.getSpec() == null ? Optional.empty() : Optional.ofNullable(l.getSpec().getHolderIdentity());
  }

}

package io.egressservice.cluster;

import static io.egressservice.cluster.SteeringCluster.LB_IPS;
import static io.egressservice.cluster.SteeringCluster.PATIENCE;
import static io.egressservice.cluster.SteeringCluster.SERVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.ApiServer;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.ClassOrderer;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestClassOrder;
import org.junit.jupiter.api.TestInstance;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * {@link SteeringClusterTest} and {@link SteeringGuardClusterTest} with the agents in rule mode {@code mark}, on one
 * cluster: the steering cases first (each deletes its service and waits for the pristine kernel state), then the
 * guard's (web on node-a until the cluster closes).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestClassOrder(ClassOrderer.OrderAnnotation.class)
class MarkRuleModeClusterTest {
  /** The default --mark-mask holds 63 marks; web takes one on every node, these the rest and one more. */
  static final int YOUNGER_NETWORKS = 63;

  SteeringCluster shared;

  @BeforeAll
  void startCluster() {
    shared = SteeringCluster.start("mark");
  }

  @AfterAll
  void stopCluster() {
    if (shared != null) {
      shared.close();
    }
  }

  @Nested
  @Order(1)
  class Steering extends SteeringClusterTest {
    @Override
    SteeringCluster shared() {
      return shared;
    }

    /**
     * 63 younger sourceIPBy Network services without endpoints or LB IPs (eight tenant namespaces: the default
     * --mark-networks-per-namespace is 8) on networks 1..63 want every mark of the default mask on every node. web, the
     * oldest, keeps its marks: its pods still leave through node-a's network (ext-a2) with the LB IP. The youngest
     * asker and {@code late} (a LoadBalancerIP service on network 200 hosted on node-b, pod-b2 its endpoint) get
     * nothing there: pod-b2 leaves as if it had not opted in (node-b's main uplink, the node's address), never with
     * late's LB IP.
     */
    @Test
    @Order(6)
    void theOldestServiceKeepsItsMarkAndNetworkWhenYoungerOnesExhaustTheMaskAndARefusedServicesPodLeavesUntouched() {
      KubernetesClient client = cluster.api().client();
      List<Runnable> cleanup = new ArrayList<>();
      try {
        cluster.api().createLoadBalancer(SERVICE, "172.30.0.10", "fd02::10", LB_IPS,
            List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1"), cluster.pod("pod-c1")));
        egressService(ApiServer.NAMESPACE, SERVICE, SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-a"));
        await().atMost(PATIENCE).until(() -> cluster.api().host(SERVICE).equals(Optional.of("node-a")));
        for (int n = 1; n <= YOUNGER_NETWORKS; n++) {
          String ns = "tenant-" + (n - 1) / 8;
          String name = "net" + n;
          client.services().resource(new ServiceBuilder()
              .withNewMetadata().withName(name).withNamespace(ns).endMetadata()
              .withNewSpec().withType("LoadBalancer").withClusterIP("172.30.1." + n).withClusterIPs("172.30.1." + n)
              .endSpec().build()).create();
          egressService(ns, name, SourceIPBy.NETWORK, Integer.toString(n), Optional.empty());
          cleanup.add(() -> {
            client.resources(EgressService.class).inNamespace(ns).withName(name).delete();
            client.services().inNamespace(ns).withName(name).delete();
          });
        }
        // Both nodes hold the younger services' marks before late arrives: late is then refused from the start,
        // whatever order the informers deliver the objects in (a Service learned after late's could otherwise hand
        // late a mark for a moment).
        for (String node : List.of("node-a", "node-b")) {
          await().atMost(PATIENCE).untilAsserted(() -> assertThat(services(cluster.node(node).agent().metrics()))
              .isEqualTo(List.of(YOUNGER_NETWORKS, 1)));
        }
        cleanup.add(() -> {
          cluster.api().deleteEgressService("late");
          client.services().inNamespace(ApiServer.NAMESPACE).withName("late").delete();
          client.discovery().v1().endpointSlices().inNamespace(ApiServer.NAMESPACE)
              .withLabel("kubernetes.io/service-name", "late").delete();
        });
        // The API server sets creationTimestamp, in whole seconds, and a tie goes to the name ("shop/late" before
        // "tenant-7/net63"): late is created in a later second than every younger network, so it is the youngest.
        Instant newest = client.resources(EgressService.class).inAnyNamespace().list().getItems().stream()
            .map(es -> Instant.parse(es.getMetadata().getCreationTimestamp())).max(Instant::compareTo).orElseThrow();
        await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
            .until(() -> Instant.now().getEpochSecond() > newest.getEpochSecond());
        cluster.api().createLoadBalancer("late", "172.30.0.11", "fd02::11",
            List.of(Addresses.lbIp(6, IpFamily.V4), Addresses.lbIp(6, IpFamily.V6)), List.of(cluster.pod("pod-b2")));
        egressService(ApiServer.NAMESPACE, "late", SourceIPBy.LOADBALANCERIP, "200", Optional.of("node-b"));
        assertThat(Instant.parse(client.resources(EgressService.class).inNamespace(ApiServer.NAMESPACE)
            .withName("late").get().getMetadata().getCreationTimestamp())).as("late is the youngest").isAfter(newest);
        await().atMost(PATIENCE).until(() -> cluster.api().host("late").equals(Optional.of("node-b")));

        // On node-b: web (steering), net1..net62 configured; net63 and late refused.
        await().atMost(PATIENCE).untilAsserted(() -> assertThat(services(cluster.node("node-b").agent().metrics()))
            .isEqualTo(List.of(YOUNGER_NETWORKS, 2)));
        await().atMost(PATIENCE).untilAsserted(() -> assertThat(services(cluster.node("node-a").agent().metrics()))
            .isEqualTo(List.of(YOUNGER_NETWORKS, 2)));
        for (IpFamily f : IpFamily.values()) {
          steering.expectEndpointsLeaveThrough("ext-a2", f);
          expectUntouched("pod-b2", f);
        }
      } finally {
        cleanup.forEach(Runnable::run);
      }
    }

    private void egressService(String ns, String name, SourceIPBy mode, String network, Optional<String> node) {
      EgressServiceSpec spec = new EgressServiceSpec();
      spec.setSourceIPBy(mode);
      spec.setNetwork(network);
      node.ifPresent(n -> spec.setNodeSelector(new LabelSelectorBuilder().addToMatchLabels(ApiServer.NODE_LABEL, n)
          .build()));
      EgressService es = new EgressService();
      es.getMetadata().setName(name);
      es.getMetadata().setNamespace(ns);
      es.setSpec(spec);
      cluster.api().client().resources(EgressService.class).resource(es).create();
    }
  }

  /** configured and not_configured of egress_service_agent_services, from an agent's metrics text. */
  static List<Integer> services(String metrics) {
    int configured = -1;
    int notConfigured = -1;
    for (String line : metrics.split("\n")) {
      String value = line.substring(line.lastIndexOf(' ') + 1);
      if (line.startsWith("egress_service_agent_services{state=\"configured\"}")) {
        configured = (int) Double.parseDouble(value);
      } else if (line.startsWith("egress_service_agent_services{state=\"not_configured\"}")) {
        notConfigured = (int) Double.parseDouble(value);
      }
    }
    return List.of(configured, notConfigured);
  }

  @Nested
  @Order(2)
  class Guard extends SteeringGuardClusterTest {
    @Override
    SteeringCluster shared() {
      return shared;
    }
  }
}

package io.egressservice.controller;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.allocator.AllocatorRunner;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.informers.ClusterInformers;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.model.PlanConfig;
import io.egressservice.testing.MockApiObjects;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The allocator and two node agents together, each node with its own kernel: the owned rules and SNAT
 * entries follow status.host when the allocator moves it.
 */
@EnableKubernetesMockClient(crud = true)
class HostFollowingTest {
  static final Duration WAIT = Duration.ofSeconds(20);
  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final NetnsFixture hostA = new NetnsFixture("host-a");
  /**
   * Registered after node-a's, so it closes first: what the test starts on either node is handed to it
   * ({@link #closeLater}), so no agent outlives either namespace.
   */
  @RegisterExtension
  final NetnsFixture hostB = new NetnsFixture("host-b");
  Netns nsA;
  Netns nsB;
  Dataplane dpA;
  Dataplane dpB;

  @BeforeEach
  void setUp() {
    MockApiObjects.installCrd(client);
    nsA = hostA.ns();
    nsB = hostB.ns();
    dpA = hostA.closeLater(Dataplane.open(LinuxKernel.open(Optional.of(nsA.name())), 5000, 201));
    dpB = hostB.closeLater(Dataplane.open(LinuxKernel.open(Optional.of(nsB.name())), 5000, 201));
  }

  /** {@code resource}, closed after the test before both dataplanes and namespaces. */
  <T extends AutoCloseable> T closeLater(T resource) {
    return hostB.closeLater(resource);
  }

  static Node node(String name, String address, String podCidr, boolean ready) {
    return new NodeBuilder().withNewMetadata().withName(name).endMetadata()
        .withNewSpec().withPodCIDRs(List.of(podCidr)).endSpec()
        .withNewStatus().addNewAddress().withType("InternalIP").withAddress(address).endAddress()
          .addNewCondition().withType("Ready").withStatus(ready ? "True" : "False").endCondition().endStatus()
        .build();
  }

  void startAgent(String node, Dataplane dp) {
    NodeAgent agent = new NodeAgent(client, dp,
        new NodeAgent.Settings(node, PlanConfig.defaults(), Duration.ofSeconds(30), Duration.ofSeconds(1)),
        new AgentMetrics(), new KubernetesEvents(client, node, Clock.systemUTC()), Clock.systemUTC());
    agent.start();
    closeLater(agent);
  }

  static Set<String> snat(Dataplane dp) {
    return dp.observe().nft().snat().stream().map(SnatElement::toString).collect(Collectors.toSet());
  }

  String host() {
    EgressService es = client.resources(EgressService.class).inNamespace("default").withName("web").get();
    return es.getStatus() == null ? "" : es.getStatus().getHost();
  }

  static String rules(Netns ns) {
    return ns.exec("ip", "rule", "show");
  }

  @Test
  void theNodeAgentAndTheAllocatorOfOneProcessShareOneWatchPerKind() throws Exception {
    client.nodes().resource(node("node-a", "192.168.1.10", "10.128.0.0/24", true)).create();
    client.services().resource(KubeObjects.lbService("web", "172.30.0.10", "5.5.5.5")).create();
    client.discovery().v1().endpointSlices().resource(KubeObjects.slice("web", "web-a", "node-a", "10.128.0.5"))
        .create();
    client.resources(EgressService.class).resource(KubeObjects.egressService("web", SourceIPBy.LOADBALANCERIP, "100", ""))
        .create();
    // As the run command wires them.
    ClusterInformers informers = ClusterInformers.create(client, AllocatorConfig.defaults().resyncPeriod());
    closeLater(informers);
    NodeAgent agent = new NodeAgent(informers, dpA,
        new NodeAgent.Settings("node-a", PlanConfig.defaults(), Duration.ofSeconds(30), Duration.ofSeconds(1)),
        new AgentMetrics(), new KubernetesEvents(client, "node-a", Clock.systemUTC()), Clock.systemUTC());
    agent.start();
    closeLater(agent);
    closeLater(AllocatorRunner.start(client, informers, "egress-service-agent", "node-a"));

    await().atMost(WAIT).untilAsserted(() -> {
      assertThat(host()).isEqualTo("node-a");
      assertThat(rules(nsA)).contains("from 10.128.0.5 lookup 100 proto 201");
    });

    Map<String, Integer> watches = new java.util.TreeMap<>();
    for (var r = server.takeRequest(100, TimeUnit.MILLISECONDS); r != null; r = server.takeRequest(100, TimeUnit.MILLISECONDS)) {
      if (r.getPath().contains("watch=true")) {
        watches.merge(r.getPath().replaceAll("\\?.*", ""), 1, Integer::sum);
      }
    }
    assertThat(watches).containsOnly(
        Map.entry("/api/v1/nodes", 1),
        Map.entry("/api/v1/services", 1),
        Map.entry("/apis/discovery.k8s.io/v1/endpointslices", 1),
        Map.entry("/apis/k8s.ovn.org/v1/egressservices", 1));
  }

  @Test
  void theOwnedStateMovesWithTheHostWhenItsNodeGoesNotReady() {
    client.nodes().resource(node("node-a", "192.168.1.10", "10.128.0.0/24", true)).create();
    client.nodes().resource(node("node-b", "192.168.1.11", "10.128.1.0/24", true)).create();
    client.services().resource(KubeObjects.lbService("web", "172.30.0.10", "5.5.5.5")).create();
    client.discovery().v1().endpointSlices().resource(KubeObjects.slice("web", "web-a", "node-a", "10.128.0.5", "10.128.0.6"))
        .create();
    client.discovery().v1().endpointSlices().resource(KubeObjects.slice("web", "web-b", "node-b", "10.128.1.5")).create();
    client.resources(EgressService.class).resource(KubeObjects.egressService("web", SourceIPBy.LOADBALANCERIP, "100", ""))
        .create();
    startAgent("node-a", dpA);
    startAgent("node-b", dpB);
    closeLater(AllocatorRunner.start(client, "egress-service-agent", "test-allocator",
        new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2), Duration.ofMillis(1500),
            Duration.ofMillis(200), Duration.ofSeconds(1))));

    await().atMost(WAIT).untilAsserted(() -> {
      assertThat(host()).isEqualTo("node-a");
      assertThat(snat(dpA)).hasSize(3);
      assertThat(rules(nsA)).contains("from 10.128.1.5 lookup 100 proto 201");
    });
    assertThat(snat(dpB)).isEmpty();
    // node-b is not the host: it steers its own endpoint to node-a (table 7000, over egress-vx)
    await().atMost(WAIT).untilAsserted(() -> {
      assertThat(rules(nsB)).contains("from 10.128.1.5 lookup 7000 proto 201").doesNotContain("lookup 100");
      assertThat(nsB.exec("ip", "route", "show", "table", "7000")).contains("dst 192.168.1.10");
    });
    assertThat(client.nodes().withName("node-a").get().getMetadata().getLabels())
        .containsKey("egress-service.k8s.ovn.org/default-web");

    client.nodes().resource(node("node-a", "192.168.1.10", "10.128.0.0/24", false)).update();

    await().atMost(WAIT).untilAsserted(() -> {
      assertThat(host()).isEqualTo("node-b");
      assertThat(snat(dpB)).hasSize(3);
      assertThat(rules(nsB)).contains("from 10.128.0.5 lookup 100 proto 201");
      assertThat(snat(dpA)).isEmpty();
      // and now node-a steers its endpoints to node-b
      assertThat(rules(nsA)).contains("from 10.128.0.5 lookup 7000 proto 201").doesNotContain("lookup 100");
      assertThat(nsA.exec("ip", "route", "show", "table", "7000")).contains("dst 192.168.1.11");
      assertThat(rules(nsB)).doesNotContain("lookup 7000");
    });
  }
}

package io.egressservice.controller;

import static io.egressservice.controller.KubeObjects.NS;
import static io.egressservice.controller.KubeObjects.lbService;
import static io.egressservice.controller.KubeObjects.slice;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.GenericKubernetesResource;
import io.fabric8.kubernetes.api.model.GenericKubernetesResourceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.dsl.base.ResourceDefinitionContext;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Clock;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;

/**
 * One schema-invalid EgressService ({@code sourceIPBy: Bogus}, {@code nodeSelector} a string,
 * {@code network} an object) stopped the EgressService informer: later EgressServices were not applied while
 * /readyz said 200, and an agent restarted with such an object present never became ready. The agent's client
 * here is the one {@code run} builds (AgentSerialization); the objects are written raw, as an API server without
 * the CRD's schema stores them.
 */
@EnableKubernetesMockClient(crud = true)
class MalformedEgressServiceAgentTest {
  static final String NODE = "node-a";
  static final Duration WAIT = Duration.ofSeconds(15);
  static final ResourceDefinitionContext EGRESS_SERVICES = new ResourceDefinitionContext.Builder()
      .withGroup("k8s.ovn.org").withVersion("v1").withKind("EgressService").withPlural("egressservices")
      .withNamespaced(true).build();

  KubernetesMockServer server;
  KubernetesClient client;
  KubernetesClient agentClient;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("malformed");

  @BeforeEach
  void setUp() {
    agentClient = AgentSerialization.clientBuilder().withConfig(client.getConfiguration()).build();
    kernel.closeLater(agentClient);
  }

  NodeAgent startAgent(AgentMetrics metrics) {
    return kernel.start(agentClient,
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2)), metrics,
        new KubernetesEvents(agentClient, NODE, Clock.systemUTC()));
  }

  /** An EgressService with {@code spec} as given, host this node, and its LoadBalancer Service. */
  void createRaw(String name, Map<String, Object> spec, String clusterIp, String lbIp) {
    GenericKubernetesResource es = new GenericKubernetesResourceBuilder()
        .withApiVersion("k8s.ovn.org/v1").withKind("EgressService")
        .withNewMetadata().withName(name).withNamespace(NS).endMetadata()
        .withAdditionalProperties(Map.of("spec", spec, "status", Map.of("host", NODE)))
        .build();
    client.genericKubernetesResources(EGRESS_SERVICES).inNamespace(NS).resource(es).create();
    client.services().resource(lbService(name, clusterIp, lbIp)).create();
  }

  void createBadOnes() {
    createRaw("bogus", Map.of("sourceIPBy", "Bogus", "network", "100"), "172.30.0.21", "5.5.5.21");
    createRaw("selector-string", Map.of("nodeSelector", "kubernetes.io/hostname=node-a"), "172.30.0.22", "5.5.5.22");
    createRaw("network-object", Map.of("network", Map.of("table", 100)), "172.30.0.23", "5.5.5.23");
  }

  void createWeb() {
    kernel.createService("web", "100", "10.128.0.5");
  }

  static double malformed(AgentMetrics metrics) {
    return metrics.registry().scrape().stream()
        .filter(m -> m.getMetadata().getPrometheusName().equals("egress_service_agent_malformed_objects"))
        .flatMap(m -> ((io.prometheus.metrics.model.snapshots.GaugeSnapshot) m).getDataPoints().stream())
        .filter(d -> "EgressService".equals(d.getLabels().get("kind")))
        .mapToDouble(io.prometheus.metrics.model.snapshots.GaugeSnapshot.GaugeDataPointSnapshot::getValue).sum();
  }

  @Test
  void malformedEgressServicesAreRefusedAloneAndLaterOnesAreStillApplied() {
    AgentMetrics metrics = new AgentMetrics();
    NodeAgent agent = startAgent(metrics);
    await().atMost(WAIT).until(() -> agent.readiness().ok());

    createBadOnes();
    createWeb();

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201"));
    await().atMost(WAIT).untilAsserted(() -> assertThat(malformed(metrics)).isEqualTo(3.0));
    assertThat(kernel.rules()).doesNotContain("172.30.0.21").doesNotContain("172.30.0.22").doesNotContain("172.30.0.23");
    assertThat(agent.readiness().ok()).isTrue();

    // Fixed, it is applied like any other.
    client.genericKubernetesResources(EGRESS_SERVICES).inNamespace(NS).withName("bogus")
        .edit(r -> new GenericKubernetesResourceBuilder(r)
            .withAdditionalProperties(Map.of("spec", Map.of("sourceIPBy", "LoadBalancerIP", "network", "100"),
                "status", Map.of("host", NODE))).build());
    client.discovery().v1().endpointSlices().resource(slice("bogus", "bogus-1", NODE, "10.128.0.21")).create();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.21 lookup 100 proto 201"));
  }

  @Test
  void anAgentStartedWithMalformedEgressServicesPresentBecomesReadyAndAppliesTheRest() {
    createBadOnes();
    createWeb();

    NodeAgent agent = startAgent(new AgentMetrics());

    await().atMost(WAIT).until(() -> agent.readiness().ok());
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201"));
  }

  @Test
  void theAllocatorReportsAMalformedEgressServiceWithoutWritingIt() {
    createRaw("bogus", Map.of("sourceIPBy", "Bogus"), "172.30.0.21", "5.5.5.21");
    io.egressservice.allocator.AllocatorRunner runner = io.egressservice.allocator.AllocatorRunner.start(agentClient,
        NS, "allocator-1", new io.egressservice.allocator.AllocatorConfig("lease", Duration.ofSeconds(4),
            Duration.ofSeconds(3), Duration.ofMillis(500), Duration.ofSeconds(30)));
    kernel.closeLater(runner);

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("MalformedEgressService")).singleElement()
        .satisfies(e -> assertThat(e.getMessage()).contains("spec.sourceIPBy: 'Bogus' is not one of LoadBalancerIP,"
            + " Network")));
    GenericKubernetesResource stored = client.genericKubernetesResources(EGRESS_SERVICES).inNamespace(NS)
        .withName("bogus").get();
    assertThat(stored.getAdditionalProperties().get("spec")).isEqualTo(Map.of("sourceIPBy", "Bogus"));
  }

  @Test
  void readinessSaysSoWhenAWatchStaysDown() {
    NodeAgent agent = kernel.start(agentClient,
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2),
            Duration.ofMillis(500)), new AgentMetrics(), (es, type, reason, message) -> {});
    await().atMost(WAIT).until(() -> agent.readiness().ok());

    server.destroy();

    await().atMost(WAIT).untilAsserted(() -> assertThat(agent.readiness()).satisfies(p -> {
      assertThat(p.ok()).isFalse();
      assertThat(p.detail()).startsWith("watch not running for more than 500 ms: EgressService, Service,");
    }));
    assertThat(agent.liveness().ok()).isTrue();
  }

}

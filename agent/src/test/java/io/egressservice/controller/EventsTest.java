package io.egressservice.controller;

import static io.egressservice.controller.KubeObjects.NS;
import static io.egressservice.controller.KubeObjects.egressService;
import static io.egressservice.controller.KubeObjects.lbService;
import static io.egressservice.controller.KubeObjects.node;
import static io.egressservice.controller.KubeObjects.slice;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The Events a node agent writes, against fabric8's mock API server (CRUD mode: it keeps the Events, so
 * a restarted agent lists them as it would from a real API server) and a real kernel in a namespace.
 */
@EnableKubernetesMockClient(crud = true)
class EventsTest {
  static final String NODE = "node-a";
  static final Duration WAIT = Duration.ofSeconds(30);
  /** Fast enough for 200 services at once; per service a small burst, refilled quickly, so that tests are short. */
  static final EventLimits LIMITS = new EventLimits(5, Duration.ofMillis(500), 1000, Duration.ofMillis(1), 4096);

  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("events");

  @BeforeEach
  void setUp() {
    client.nodes().resource(node("node-b", "192.168.1.11", "10.128.1.0/24")).create();
  }

  NodeAgent start(AgentMetrics metrics) {
    return kernel.start(
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2), LIMITS),
        metrics);
  }

  /** Ready, and every outcome of its first reconciles written (or found said already). */
  static void settled(NodeAgent agent) {
    await().atMost(WAIT).until(() -> agent.readiness().ok() && agent.eventsIdle());
  }

  List<Event> eventsOn(String service) {
    return client.v1().events().inNamespace(NS).list().getItems().stream()
        .filter(e -> service.equals(e.getInvolvedObject().getName())).toList();
  }

  static double counter(AgentMetrics metrics, String name, String label, String value) {
    for (MetricSnapshot s : metrics.registry().scrape()) {
      if (s instanceof CounterSnapshot c && c.getMetadata().getName().equals(name)) {
        return c.getDataPoints().stream().filter(d -> value.equals(d.getLabels().get(label)))
            .mapToDouble(CounterSnapshot.CounterDataPointSnapshot::getValue).sum();
      }
    }
    return 0;
  }

  void createService(int i, String network) {
    String name = "s" + i;
    client.discovery().v1().endpointSlices().resource(slice(name, name + "-1", NODE, "10.128.0." + (i + 2))).create();
    client.services().resource(lbService(name, "172.30.0." + (i + 1), "5.5.0." + (i + 1))).create();
    client.resources(EgressService.class).resource(egressService(name, SourceIPBy.LOADBALANCERIP, network, NODE)).create();
  }

  void setNetwork(String service, String network) {
    client.resources(EgressService.class).inNamespace(NS).withName(service).edit(es -> {
      es.getSpec().setNetwork(network);
      return es;
    });
  }

  /**
   * Outcome Events across restarts: 200 services and 4 restarts wrote 800 EgressConfigured Events. A
   * restarted agent reads what its node said before and reports only what changed while it was down.
   */
  @Test
  void restartsWriteNoNewEventsForOutcomesAlreadyReported() throws Exception {
    for (int i = 0; i < 200; i++) {
      createService(i, "");
    }
    NodeAgent agent = start(new AgentMetrics());
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("EgressConfigured")).hasSize(200));
    settled(agent);

    for (int restart = 1; restart <= 4; restart++) {
      agent.close();
      AgentMetrics metrics = new AgentMetrics();
      agent = start(metrics);
      settled(agent);
      assertThat(counter(metrics, "egress_service_agent_events_written", "op", "create")).as("restart %d", restart).isZero();
      assertThat(counter(metrics, "egress_service_agent_events_written", "op", "patch")).as("restart %d", restart).isZero();
    }
    assertThat(kernel.events("EgressConfigured")).hasSize(200).allSatisfy(e -> assertThat(e.getCount()).isEqualTo(1));

    // What changed while the agent was down is reported: s0's network is gone, s1 is another node's now
    // (node-a steers its endpoint there).
    agent.close();
    setNetwork("s0", "no-such-net");
    client.resources(EgressService.class).inNamespace(NS).withName("s1").delete();
    await().atMost(WAIT).until(() -> client.resources(EgressService.class).inNamespace(NS).withName("s1").get() == null);
    client.resources(EgressService.class).resource(egressService("s1", SourceIPBy.LOADBALANCERIP, "", "node-b")).create();
    agent = start(new AgentMetrics());
    settled(agent);

    assertThat(eventsOn("s0")).extracting(Event::getReason).containsExactlyInAnyOrder("EgressConfigured", "NetworkNotFound");
    assertThat(eventsOn("s1")).extracting(Event::getReason).containsExactlyInAnyOrder("EgressConfigured", "EndpointsSteered");
    assertThat(kernel.events("EgressConfigured")).hasSize(200);
  }

  /**
   * A flapping outcome: 5 minutes of a flapping outcome wrote 21,000 Events. Now the same
   * outcome again is a repeat of its Event (count and last time), and writes per service are rate-limited,
   * the latest outcome always written last; what waited and was replaced is counted as dropped.
   */
  @Test
  void aFlappingServiceWritesBoundedEventsAggregatedAndEndsWithItsLatestOutcome() throws Exception {
    AgentMetrics metrics = new AgentMetrics();
    NodeAgent agent = start(metrics);
    createService(0, "100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("EgressConfigured")).hasSize(1));
    settled(agent);

    long started = System.nanoTime();
    for (int i = 0; i < 60; i++) {
      setNetwork("s0", i % 2 == 0 ? "no-such-net" : "100");
      Thread.sleep(50); // the flapping's pace: each change is its own reconcile (25 ms apart at most)
    }
    double seconds = (System.nanoTime() - started) / 1e9;
    settled(agent);

    List<Event> written = eventsOn("s0");
    assertThat(written).extracting(Event::getReason).containsExactlyInAnyOrder("EgressConfigured", "NetworkNotFound");
    int occurrences = written.stream().mapToInt(Event::getCount).sum();
    // one at the start, then the burst of 5 and one per 0.5 s (and one refilled while settling)
    assertThat(occurrences).isLessThanOrEqualTo(1 + 5 + (int) Math.ceil(seconds / 0.5) + 2).isGreaterThan(2);
    assertThat(counter(metrics, "egress_service_agent_events_dropped", "cause", "superseded")).isPositive();
    assertThat(counter(metrics, "egress_service_agent_events_written", "op", "patch")).isPositive();
    Event configured = kernel.events("EgressConfigured").get(0);
    Event missing = kernel.events("NetworkNotFound").get(0);
    assertThat(Instant.parse(configured.getLastTimestamp())).isAfterOrEqualTo(Instant.parse(missing.getLastTimestamp()));
    assertThat(configured.getCount()).isGreaterThan(1);
  }

  /** A configured service whose network goes missing said "EgressRemoved", a Normal Event. */
  @Test
  void anUnknownNetworkOnAConfiguredServiceIsAWarningNetworkNotFound() {
    NodeAgent agent = start(new AgentMetrics());
    createService(0, "100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("EgressConfigured")).hasSize(1));

    setNetwork("s0", "no-such-net");

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("NetworkNotFound")).singleElement().satisfies(e -> {
      assertThat(e.getType()).isEqualTo("Warning");
      assertThat(e.getMessage()).isEqualTo("on node node-a: network 'no-such-net' not found on this node"
          + e.getMessage().substring(("on node node-a: network 'no-such-net' not found on this node").length()));
    }));
    settled(agent);
    assertThat(kernel.events("EgressRemoved")).isEmpty();
  }

  /** Event messages said "SNAT of N endpoint(s)", a literal N. */
  @Test
  void eventMessagesSayTheRealCountsAndACountChangeAloneWritesNothing() {
    // Objects first: created after the start, the Service can reach the agent before its slice (separate watches),
    // and the first Event then rightly says 0 endpoints, which a count change alone does not rewrite.
    createService(0, "100");
    NodeAgent agent = start(new AgentMetrics());
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("EgressConfigured")).singleElement()
        .satisfies(e -> assertThat(e.getMessage()).contains("SNAT of 1 endpoint(s) to 5.5.0.1").doesNotContain(" N ")));

    client.discovery().v1().endpointSlices().resource(slice("s0", "s0-1", NODE, "10.128.0.2", "10.128.0.3")).update();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.3 lookup 100"));
    settled(agent);

    assertThat(kernel.events("EgressConfigured")).singleElement().satisfies(e -> assertThat(e.getCount()).isEqualTo(1));
  }
}

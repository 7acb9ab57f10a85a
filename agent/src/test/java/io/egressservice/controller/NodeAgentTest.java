package io.egressservice.controller;

import static io.egressservice.controller.KubeObjects.NS;
import static io.egressservice.controller.KubeObjects.egressService;
import static io.egressservice.controller.KubeObjects.lbService;
import static io.egressservice.controller.KubeObjects.node;
import static io.egressservice.controller.KubeObjects.slice;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.health.HealthServer;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The node agent against fabric8's mock API server (CRUD mode, real client and informers) and a real
 * kernel in a throwaway namespace.
 */
@EnableKubernetesMockClient(crud = true)
class NodeAgentTest {
  static final String NODE = "node-a";
  static final Duration WAIT = Duration.ofSeconds(15);

  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("agent");

  @BeforeEach
  void setUp() {
    client.nodes().resource(node("node-b", "192.168.1.11", "10.128.1.0/24")).create();
  }

  NodeAgent startAgent(Duration resync) {
    return startAgent(resync, new AgentMetrics());
  }

  NodeAgent startAgent(Duration resync, AgentMetrics metrics) {
    return kernel.start(new NodeAgent.Settings(NODE, PlanConfig.defaults(), resync, Duration.ofSeconds(2)), metrics);
  }

  void createWeb(String network) {
    kernel.createService("web", network, "10.128.0.5", "10.128.0.6");
  }

  @Test
  void objectsCreatedThroughTheApiReachTheKernelAndUpdatesFollow() {
    startAgent(Duration.ofMinutes(10));
    createWeb("100");

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules())
        .contains("5000:\tfrom 10.128.0.5 lookup 100 proto 201")
        .contains("5000:\tfrom 10.128.0.6 lookup 100 proto 201")
        .contains("5000:\tfrom 172.30.0.10 lookup 100 proto 201"));
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat())
        .contains("10.128.0.5 comment \"default/web\" : 5.5.5.5"));

    client.discovery().v1().endpointSlices().resource(slice("web", "web-1", NODE, "10.128.0.5")).update();

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).doesNotContain("10.128.0.6"));
    client.resources(EgressService.class).inNamespace(NS).withName("web").delete();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).doesNotContain("proto 201"));
  }

  /** The process gives back the heap its start needed once, after the first complete reconcile. */
  @Test
  void theActionAfterTheFirstReconcileRunsOnceWhenTheKernelHoldsThePlan() {
    NodeAgent agent = new NodeAgent(client, kernel.dataplane(),
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2)),
        new AgentMetrics(), new KubernetesEvents(client, NODE, Clock.systemUTC()), Clock.systemUTC());
    kernel.closeLater(agent);
    // each run records the rules it saw, in one step: the count and what the run saw cannot disagree
    List<String> rulesAtEachRun = new java.util.concurrent.CopyOnWriteArrayList<>();
    agent.afterFirstReconcile(() -> rulesAtEachRun.add(kernel.rules()));
    createWeb("100");
    agent.start();

    await().atMost(WAIT).until(() -> rulesAtEachRun.size() == 1);
    assertThat(rulesAtEachRun.get(0)).contains("5000:\tfrom 10.128.0.5 lookup 100 proto 201");
    client.discovery().v1().endpointSlices().resource(slice("web", "web-1", NODE, "10.128.0.7")).update();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.7 lookup 100"));
    assertThat(rulesAtEachRun).as("once, not after every reconcile").hasSize(1);
  }

  @Test
  void aRuleDeletedByHandIsBackWithinASecondOrTwoWithoutWaitingForTheResync() {
    NodeAgent agent = startAgent(Duration.ofMinutes(10));
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201"));
    await().atMost(WAIT).until(() -> agent.readiness().ok());

    kernel.ns().exec("ip", "rule", "del", "priority", "5000", "from", "10.128.0.5", "lookup", "100", "protocol", "201");

    await().atMost(Duration.ofSeconds(2)).pollInterval(Duration.ofMillis(50))
        .untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201"));
  }

  /** A rule edited by hand, end to end: the kernel's notification of the edited rule is drift, repaired at once. */
  @Test
  void aRuleOfOursEditedToCarryAnExtraSelectorIsRepairedWithoutWaitingForTheResync() {
    NodeAgent agent = startAgent(Duration.ofMinutes(10));
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201"));
    await().atMost(WAIT).until(() -> agent.readiness().ok());

    kernel.ns().exec("ip", "rule", "add", "priority", "5000", "from", "10.128.0.5", "ipproto", "tcp", "dport", "9", "lookup", "100",
        "protocol", "201");
    kernel.ns().exec("ip", "rule", "del", "priority", "5000", "from", "10.128.0.5", "lookup", "100", "protocol", "201");

    await().atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> assertThat(kernel.rules())
        .contains("5000:\tfrom 10.128.0.5 lookup 100 proto 201").doesNotContain("dport"));
  }

  @Test
  void aThrowRouteDeletedByHandIsBackAndAnAddressAddedToTheNodeIsExemptWithoutWaitingForTheResync() {
    NodeAgent agent = startAgent(Duration.ofMinutes(10));
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.ns().exec("ip", "route", "show", "table", "100"))
        .contains("throw 192.168.1.10/31 proto 201"));
    await().atMost(WAIT).until(() -> agent.readiness().ok());

    kernel.ns().exec("ip", "route", "del", "throw", "192.168.1.10/31", "table", "100", "proto", "201");
    await().atMost(Duration.ofSeconds(2)).pollInterval(Duration.ofMillis(50)).untilAsserted(() ->
        assertThat(kernel.ns().exec("ip", "route", "show", "table", "100")).contains("throw 192.168.1.10/31 proto 201"));

    kernel.ns().exec("ip", "link", "add", "extra", "type", "veth", "peer", "name", "extra-peer");
    kernel.ns().exec("ip", "addr", "add", "10.89.0.7/24", "dev", "extra");
    await().atMost(Duration.ofSeconds(2)).pollInterval(Duration.ofMillis(50)).untilAsserted(() ->
        assertThat(kernel.ns().exec("ip", "route", "show", "table", "100")).contains("throw 10.89.0.7 proto 201"));
  }

  @Test
  void anSnatElementDeletedByHandIsBackWithinAFewSecondsWithoutWaitingForTheResync() {
    NodeAgent agent = startAgent(Duration.ofMinutes(10));
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat()).contains("10.128.0.5 comment \"default/web\" : 5.5.5.5"));
    await().atMost(WAIT).until(() -> agent.readiness().ok());

    kernel.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.128.0.5 }");

    await().atMost(Duration.ofSeconds(4)).pollInterval(Duration.ofMillis(100))
        .untilAsserted(() -> assertThat(kernel.snat()).contains("10.128.0.5 comment \"default/web\" : 5.5.5.5"));
  }

  /**
   * While endpoint changes keep the loop busy, the idle wait never looks at nftables, and every reconcile is a fast
   * one that reads the generation at its end: an element deleted by hand in between was taken for one of the agent's
   * own commits and stayed missing until the resync. Each reconcile now checks the generation before it starts, and
   * one that sees an edit it did not make observes in full.
   */
  @Test
  void anSnatElementDeletedByHandWhileEndpointsChurnIsBackWithoutWaitingForTheResync() throws Exception {
    NodeAgent agent = startAgent(Duration.ofMinutes(10));
    createWeb("100");
    client.discovery().v1().endpointSlices().resource(slice("web", "churn", NODE, "10.128.0.7")).create();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat()).contains("10.128.0.5 comment \"default/web\" : 5.5.5.5"));
    await().atMost(WAIT).until(() -> agent.readiness().ok());

    java.util.concurrent.atomic.AtomicBoolean churning = new java.util.concurrent.atomic.AtomicBoolean(true);
    Thread churn = new Thread(() -> {
      for (int i = 0; churning.get() && i < 2000; i++) {
        client.discovery().v1().endpointSlices().resource(slice("web", "churn", NODE, "10.128.0." + (7 + i % 2))).update();
        try {
          Thread.sleep(20);
        } catch (InterruptedException e) {
          return;
        }
      }
    }, "endpoint-churn");
    churn.start();
    try {
      await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat()).contains("10.128.0.8 "));
      kernel.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.128.0.5 }");
      await().atMost(Duration.ofSeconds(6)).pollInterval(Duration.ofMillis(100))
          .untilAsserted(() -> assertThat(kernel.snat()).contains("10.128.0.5 comment \"default/web\" : 5.5.5.5"));
    } finally {
      churning.set(false);
      churn.join(10_000);
    }
  }

  @Test
  void aRestartOverExistingStateChangesNothing() {
    NodeAgent first = startAgent(Duration.ofMinutes(10));
    createWeb("100");
    await().atMost(WAIT).until(() -> first.readiness().ok()
        && first.lastReconcile().map(r -> r.changesApplied() > 0 || kernel.rules().contains("proto 201")).orElse(false));
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 172.30.0.10 lookup 100 proto 201"));
    first.close();
    String before = kernel.rules();

    NodeAgent second = startAgent(Duration.ofMinutes(10));

    await().atMost(WAIT).until(() -> second.readiness().ok());
    assertThat(second.lastReconcile().orElseThrow().changesApplied()).isZero();
    assertThat(kernel.rules()).isEqualTo(before);
  }

  @Test
  void eventsAreWrittenWhenTheOutcomeChangesNeverPerResync() {
    NodeAgent agent = startAgent(Duration.ofMillis(200));
    createWeb("100");
    client.resources(EgressService.class).resource(egressService("lost", SourceIPBy.LOADBALANCERIP, "no-such-net", NODE)).create();
    client.services().resource(lbService("lost", "172.30.0.11", "5.5.5.6")).create();

    await().atMost(WAIT).untilAsserted(() -> {
      assertThat(kernel.events("EgressConfigured")).hasSize(1);
      assertThat(kernel.events("NetworkNotFound")).singleElement()
          .satisfies(e -> assertThat(e.getMessage()).contains("network 'no-such-net' not found on this node"));
    });
    long reconcilesSoFar = agent.reconcileCount();
    await().atMost(WAIT).until(() -> agent.reconcileCount() >= reconcilesSoFar + 5);

    assertThat(kernel.events("EgressConfigured")).hasSize(1);
    assertThat(kernel.events("NetworkNotFound")).hasSize(1);
    Event configured = kernel.events("EgressConfigured").get(0);
    assertThat(configured.getInvolvedObject().getKind()).isEqualTo("EgressService");
    assertThat(configured.getInvolvedObject().getName()).isEqualTo("web");
    assertThat(configured.getReportingInstance()).isEqualTo(NODE);
    assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201").doesNotContain("172.30.0.11");
  }

  @Test
  void probesAndMetricsAreServedOnOnePort() throws Exception {
    AgentMetrics metrics = new AgentMetrics();
    NodeAgent agent = new NodeAgent(client, kernel.dataplane(),
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2)), metrics,
        (es, type, reason, message) -> {}, Clock.systemUTC());
    HealthServer health = HealthServer.start(0, metrics.registry(), agent::liveness, agent::readiness);
    kernel.closeLater(health);
    HttpClient http = HttpClient.newHttpClient();
    URI base = URI.create("http://127.0.0.1:" + health.port());
    assertThat(get(http, base.resolve("/readyz")).statusCode()).isEqualTo(503);

    agent.start();
    kernel.closeLater(agent);
    createWeb("100");

    await().atMost(WAIT).untilAsserted(() -> assertThat(get(http, base.resolve("/readyz")).statusCode()).isEqualTo(200));
    assertThat(get(http, base.resolve("/healthz")).statusCode()).isEqualTo(200);
    await().atMost(WAIT).untilAsserted(() -> assertThat(get(http, base.resolve("/metrics")).body())
        .contains("egress_service_agent_reconcile_duration_seconds_bucket")
        .contains("egress_service_agent_owned_rules{family=\"inet\"} 3.0")
        .contains("egress_service_agent_owned_routes{family=\"inet\"} 2.0")
        .contains("egress_service_agent_snat_entries{family=\"inet\"} 2.0")
        .contains("egress_service_agent_services{state=\"configured\"} 1.0")
        .contains("egress_service_agent_last_successful_reconcile_timestamp_seconds"));
  }

  @Test
  void anEventWriteThatHangsDoesNotHoldUpReconciles() throws Exception {
    java.util.concurrent.CountDownLatch release = new java.util.concurrent.CountDownLatch(1);
    java.util.concurrent.atomic.AtomicInteger attempted = new java.util.concurrent.atomic.AtomicInteger();
    EventSink hanging = (es, type, reason, message) -> {
      attempted.incrementAndGet();
      try {
        release.await();
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
    kernel.closeLater(release::countDown);
    NodeAgent agent = kernel.start(client,
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2)),
        new AgentMetrics(), hanging);
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.6 lookup 100 proto 201"));
    await().atMost(WAIT).until(() -> attempted.get() >= 1);

    // The Event writer is stuck (as against an API server that accepts connections and never
    // answers); the kernel still follows the API and drift is still repaired.
    client.discovery().v1().endpointSlices().resource(slice("web", "web-1", NODE, "10.128.0.5", "10.128.0.8")).update();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.8 lookup 100 proto 201"));
    kernel.ns().exec("ip", "rule", "del", "priority", "5000", "from", "10.128.0.8", "lookup", "100", "protocol", "201");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.8 lookup 100 proto 201"));
    assertThat(agent.liveness().ok()).isTrue();
  }

  @Test
  void withTheApiServerGoneTheKernelStateIsKeptAndTheLoopStaysAliveAndItCatchesUpWhenTheServerIsBack()
      throws Exception {
    NodeAgent agent = startAgent(Duration.ofMillis(300));
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201"));
    String before = kernel.rules();
    long reconciles = agent.reconcileCount();
    int port = server.getPort();

    server.destroy();

    // Resyncs keep running from the informer caches; nothing is pruned for want of an API server.
    await().atMost(WAIT).until(() -> agent.reconcileCount() >= reconciles + 3);
    assertThat(kernel.rules()).isEqualTo(before);
    assertThat(agent.liveness().ok()).isTrue();
    kernel.ns().exec("ip", "rule", "del", "priority", "5000", "from", "10.128.0.6", "lookup", "100", "protocol", "201");
    // Drift is still repaired (re-added rules come last among their priority, so compare as sets).
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules().lines()).containsExactlyInAnyOrderElementsOf(
        before.lines().toList()));

    // An API server comes back on the same address (restored with the same objects, one endpoint
    // changed meanwhile): the informers reconnect and the agent catches up.
    KubernetesMockServer restored = new KubernetesMockServer(new io.fabric8.mockwebserver.Context(),
        new io.fabric8.mockwebserver.MockWebServer(), new java.util.HashMap<>(),
        new io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher(),
        client.getMasterUrl().getProtocol().equals("https"));
    restored.init(java.net.InetAddress.getByName(client.getMasterUrl().getHost()), port);
    kernel.closeLater(restored::destroy);
    client.nodes().resource(node(NODE, "192.168.1.10", "10.128.0.0/24")).create();
    client.resources(EgressService.class).resource(egressService("web", SourceIPBy.LOADBALANCERIP, "100", NODE)).create();
    client.services().resource(lbService("web", "172.30.0.10", "5.5.5.5")).create();
    client.discovery().v1().endpointSlices().resource(slice("web", "web-1", NODE, "10.128.0.5", "10.128.0.7")).create();
    await().atMost(Duration.ofSeconds(45)).untilAsserted(() -> assertThat(kernel.rules())
        .contains("from 10.128.0.7 lookup 100 proto 201").doesNotContain("from 10.128.0.6 "));
  }

  @Test
  void theKernelFollowsEveryKindOfChange() {
    startAgent(Duration.ofMinutes(10));
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.6 lookup 100 proto 201"));

    // network changed: every source moves to the new table
    client.resources(EgressService.class).resource(egressService("web", SourceIPBy.LOADBALANCERIP, "200", NODE)).update();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules())
        .contains("from 10.128.0.5 lookup 200 proto 201", "from 172.30.0.10 lookup 200 proto 201")
        .doesNotContain("lookup 100"));

    // sourceIPBy changed to Network (status.host ALL): no SNAT, only local endpoints
    client.resources(EgressService.class).resource(egressService("web", SourceIPBy.NETWORK, "200", "ALL")).update();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat()).doesNotContain("10.128.0.5"));
    assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 200 proto 201");

    // an endpoint moves to another node: this node no longer routes it
    client.discovery().v1().endpointSlices().resource(slice("web", "web-1", NODE, "10.128.0.5")).update();
    client.discovery().v1().endpointSlices().resource(slice("web", "web-2", "node-b", "10.128.1.6")).create();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).doesNotContain("10.128.0.6").doesNotContain("10.128.1.6")
        .contains("from 10.128.0.5 lookup 200 proto 201"));

    // back to LoadBalancerIP on this host: SNAT for every endpoint, remote ones too
    client.resources(EgressService.class).resource(egressService("web", SourceIPBy.LOADBALANCERIP, "200", NODE)).update();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat()).contains("10.128.0.5", "10.128.1.6"));

    // the LB ingress IP goes away: nothing is configured
    client.services().resource(new io.fabric8.kubernetes.api.model.ServiceBuilder(lbService("web", "172.30.0.10", "5.5.5.5"))
        .editStatus().withNewLoadBalancer().endLoadBalancer().endStatus().build()).update();
    await().atMost(WAIT).untilAsserted(() -> {
      assertThat(kernel.rules()).doesNotContain("proto 201");
      assertThat(kernel.snat()).doesNotContain("10.128.0.5");
    });
  }

  @Test
  void aBurstOfFiveHundredEndpointUpdatesEndsInAHandfulOfReconciles() throws Exception {
    int writers = 10;
    for (int k = 0; k < writers; k++) {
      client.discovery().v1().endpointSlices().resource(slice("web", "burst-" + k, NODE, "10.128.0.200")).create();
    }
    // The in-process mock API server takes a few hundred writes a second once its code is compiled,
    // a fifth of that before: warm it up first, so that the burst is one (a real API server's watch
    // delivers a rollout's updates faster still).
    writeBurst(writers, 30);
    NodeAgent agent = startAgent(Duration.ofMinutes(10));
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.6 lookup 100 proto 201"));
    await().atMost(WAIT).until(() -> agent.readiness().ok());
    long before = agent.reconcileCount();

    // A rollout-like storm: 10 writers, each updating its own slice 50 times, as fast as the API takes it.
    double burstSeconds = writeBurst(writers, 50);

    await().atMost(WAIT).untilAsserted(() -> {
      String rules = kernel.rules();
      for (int k = 0; k < writers; k++) {
        // the last update of slice k set 10 + 9k + 4 (49 % 9), the one before 10 + 9k + 3
        assertThat(rules).contains("from 10.128.0." + (14 + k * 9) + " lookup 100 proto 201")
            .doesNotContain("from 10.128.0." + (13 + k * 9) + " lookup");
      }
    });
    long reconciles = agent.reconcileCount() - before;
    System.out.printf("500 endpoint updates in %.2f s -> %d reconciles%n", burstSeconds, reconciles);
    // While a burst lasts the interval between reconciles doubles from 25 ms up to 1 s (Pacing; the rate
    // is judged over at least 50 ms): ten reconciles ramp up to it (at 0, 25, 50, 75, 100, 150, 250, 450,
    // 850, 1650 ms), then one a second, and one after the end: 11 for a steady burst of 2 s. The mock server delivers these in clumps,
    // slowly in a fresh JVM (2.5 to 5.7 s, 8 to 22 reconciles measured), and two calm stretches halve the
    // interval again. On a slowed machine the server delivers barely above the burst rate (80/s) and in
    // clumps, so the interval hovers at 100-200 ms: 29-45 reconciles for 4.6-6.2 s bursts were measured on
    // such a day. The bound allows one per 100 ms: a quarter of the unpaced rate of one per 25 ms, and
    // 500 updates still end in at most a tenth as many reconciles.
    assertThat(reconciles).isBetween(1L, 5 + Math.round(burstSeconds / 0.1));
  }

  @Test
  void changesThePlanDoesNotUseTriggerNoReconcile() {
    AgentMetrics metrics = new AgentMetrics();
    NodeAgent agent = startAgent(Duration.ofMinutes(10), metrics);
    createWeb("100");
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.6 lookup 100 proto 201"));
    await().atMost(WAIT).until(() -> agent.readiness().ok());
    client.services().resource(lbService("other", "172.30.0.99", "6.6.6.6")).create();
    client.discovery().v1().endpointSlices().resource(slice("other", "other-1", NODE, "10.128.0.50")).create();
    // Objects no EgressService names are not even cached (ClusterInformers): they reach no handler at all.
    long before = agent.reconcileCount();

    // A Service without an EgressService churns; a Node's heartbeat-like status update; a label on
    // the EgressService's own Service: none changes what the plan reads.
    for (int i = 0; i < 20; i++) {
      client.discovery().v1().endpointSlices().resource(slice("other", "other-1", NODE, "10.128.0." + (51 + i))).update();
    }
    client.nodes().withName(NODE).edit(n -> {
      n.getStatus().setConditions(List.of(new io.fabric8.kubernetes.api.model.NodeConditionBuilder()
          .withType("Ready").withStatus("True").withLastHeartbeatTime("2026-12-02T20:00:00Z").build()));
      return n;
    });
    client.services().inNamespace(NS).withName("web").edit(s -> {
      s.getMetadata().setLabels(java.util.Map.of("team", "payments"));
      return s;
    });
    // the heartbeat and the label: seen, judged irrelevant; the unrelated slice's churn is never delivered
    await().atMost(WAIT).until(() -> counter(metrics, "egress_service_agent_api_events_total", "false") >= 2);
    assertThat(agent.reconcileCount()).isEqualTo(before);

    // A change it does use still goes through at once.
    client.discovery().v1().endpointSlices().resource(slice("web", "web-1", NODE, "10.128.0.5", "10.128.0.7")).update();
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.rules()).contains("from 10.128.0.7 lookup 100 proto 201")
        .doesNotContain("from 10.128.0.6 lookup"));
    assertThat(agent.reconcileCount()).isGreaterThan(before);
  }

  /** {@code writers} threads each update their slice burst-K {@code updates} times; returns the seconds it took. */
  private double writeBurst(int writers, int updates) throws Exception {
    java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(writers);
    try {
      List<java.util.concurrent.Future<?>> done = new ArrayList<>();
      long start = System.nanoTime();
      for (int k = 0; k < writers; k++) {
        int slice = k;
        done.add(pool.submit(() -> {
          for (int i = 0; i < updates; i++) {
            client.discovery().v1().endpointSlices()
                .resource(slice("web", "burst-" + slice, NODE, "10.128.0." + (10 + slice * 9 + i % 9))).update();
          }
        }));
      }
      for (java.util.concurrent.Future<?> f : done) {
        f.get(60, java.util.concurrent.TimeUnit.SECONDS);
      }
      return (System.nanoTime() - start) / 1e9;
    } finally {
      pool.shutdown();
    }
  }

  private static double counter(AgentMetrics metrics, String name, String relevant) {
    return metrics.registry().scrape().stream().filter(m -> m.getMetadata().getPrometheusName().equals(name.replace("_total", "")))
        .flatMap(m -> ((io.prometheus.metrics.model.snapshots.CounterSnapshot) m).getDataPoints().stream())
        .filter(d -> relevant.equals(d.getLabels().get("relevant")))
        .mapToDouble(io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot::getValue)
        .sum();
  }

  private static HttpResponse<String> get(HttpClient http, URI uri) throws Exception {
    return http.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(5)).build(), HttpResponse.BodyHandlers.ofString());
  }
}

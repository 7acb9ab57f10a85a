package io.egressservice.controller;

import static io.egressservice.controller.KubeObjects.egressService;
import static io.egressservice.controller.KubeObjects.lbService;
import static io.egressservice.controller.KubeObjects.slice;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * With thousands of EgressServices, an endpoint change re-plans that one service (an incremental reconcile), and
 * a kernel notification of drift makes the reconcile it triggers a full one.
 */
@EnableKubernetesMockClient(crud = true)
class IncrementalReconcileTest {
  static final String NODE = "node-a";
  static final int SERVICES = 2000;

  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("incplan", "10.128.0.0/16");
  NodeAgent agent;

  private static String address(int i) {
    return "10.128." + (i >> 8) + "." + (i & 255);
  }

  @Test
  void anEndpointChangeAmongThousandsOfServicesReplansOnlyItsServiceAndDriftMakesTheNextReconcileFull()
      throws Exception {
    ExecutorService pool = Executors.newFixedThreadPool(4);
    try {
      for (int i = 0; i < SERVICES; i++) {
        int n = i;
        pool.submit(() -> {
          String name = "svc-" + n;
          // one service with a network, so that it has rules whose deletion the kernel notifies
          client.resources(EgressService.class).resource(
              egressService(name, SourceIPBy.LOADBALANCERIP, n == 0 ? "100" : "", NODE)).create();
          client.services().resource(lbService(name, "172.30." + (n >> 8) + "." + (n & 255),
              "5.5." + (n >> 8) + "." + (n & 255))).create();
          client.discovery().v1().endpointSlices().resource(slice(name, name + "-1", NODE, address(n))).create();
        });
      }
    } finally {
      pool.shutdown();
      assertThat(pool.awaitTermination(120, TimeUnit.SECONDS)).isTrue();
    }
    kernel.ns().exec("ip", "route", "add", "unreachable", "default", "table", "100");
    agent = kernel.start(
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2)),
        new AgentMetrics());
    await().atMost(Duration.ofSeconds(90)).untilAsserted(() -> assertThat(kernel.snat())
        .contains(address(SERVICES - 1) + " comment \"default/svc-" + (SERVICES - 1) + "\""));
    await().atMost(Duration.ofSeconds(30)).until(() -> agent.readiness().ok());

    long before = agent.reconcileCount();
    client.discovery().v1().endpointSlices().resource(slice("svc-7", "svc-7-1", NODE, "10.128.200.7")).update();

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(kernel.snat())
        .contains("10.128.200.7 comment \"default/svc-7\"").doesNotContain(address(7) + " comment"));
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.reconcileCount() > before);
    NodeAgent.ReconcileSummary api = agent.lastReconcile().orElseThrow();
    assertThat(api.trigger()).isEqualTo(NodeAgent.TRIGGER_API);
    assertThat(api.full()).as("an endpoint change takes the incremental path").isFalse();
    assertThat(api.servicesPlanned()).isEqualTo(1);

    long beforeDrift = agent.reconcileCount();
    kernel.ns().exec("ip", "rule", "del", "priority", "5000", "from", address(0), "lookup", "100", "protocol", "201");
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(kernel.rules())
        .contains("from " + address(0) + " lookup 100 proto 201"));
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.reconcileCount() > beforeDrift);
    NodeAgent.ReconcileSummary drift = agent.lastReconcile().orElseThrow();
    assertThat(drift.trigger()).isEqualTo(NodeAgent.TRIGGER_KERNEL);
    assertThat(drift.full()).as("drift repairs take the full path").isTrue();
    assertThat(drift.servicesPlanned()).isEqualTo(SERVICES);

    // and, the kernel view clean again, the next endpoint change is incremental again
    long afterDrift = agent.reconcileCount();
    client.discovery().v1().endpointSlices().resource(slice("svc-9", "svc-9-1", NODE, "10.128.200.9")).update();
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(kernel.snat())
        .contains("10.128.200.9 comment \"default/svc-9\""));
    await().atMost(Duration.ofSeconds(10)).until(() -> agent.reconcileCount() > afterDrift);
    assertThat(agent.lastReconcile().orElseThrow().full()).isFalse();
  }
}

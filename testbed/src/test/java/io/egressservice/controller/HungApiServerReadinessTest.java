package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.egressservice.testbed.ApiProxy;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.time.Clock;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An API server that accepts connections and never answers (behind a proxy that freezes every byte, open
 * connections included) must count as down: the watch gauge 0 and /readyz failing, not 1 and 200 throughout.
 */
@EnableKubernetesMockClient(crud = true)
class HungApiServerReadinessTest {
  static final String NODE = AgentKernel.NODE;

  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("hung");

  static double watchUp(AgentMetrics metrics, String kind) {
    for (MetricSnapshot s : metrics.registry().scrape()) {
      if (s instanceof GaugeSnapshot g && g.getMetadata().getName().equals("egress_service_agent_api_watch_up")) {
        return g.getDataPoints().stream().filter(d -> kind.equals(d.getLabels().get("kind")))
            .mapToDouble(GaugeSnapshot.GaugeDataPointSnapshot::getValue).findFirst().orElse(Double.NaN);
      }
    }
    return Double.NaN;
  }

  @Test
  void anApiServerThatHangsCountsAsDownAndItsReturnAsUp() {
    ApiProxy proxy = kernel.closeLater(new ApiProxy(server.getPort()));
    KubernetesClient viaProxy = kernel.closeLater(new KubernetesClientBuilder().withConfig(
        new ConfigBuilder(client.getConfiguration())
            .withMasterUrl(client.getMasterUrl().getProtocol() + "://127.0.0.1:" + proxy.port()).build()).build());
    AgentMetrics metrics = new AgentMetrics();
    NodeAgent agent = kernel.start(viaProxy,
        new NodeAgent.Settings(NODE, PlanConfig.defaults(), Duration.ofMinutes(10), Duration.ofSeconds(2),
            Duration.ofSeconds(2)),
        metrics, new KubernetesEvents(viaProxy, NODE, Clock.systemUTC()));
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> {
      assertThat(agent.readiness().ok()).isTrue();
      assertThat(watchUp(metrics, "EgressService")).isEqualTo(1.0);
    });

    proxy.mode(ApiProxy.Mode.HANG);
    long hungAt = System.nanoTime();

    // quiet for 10 s, then a probe unanswered for 5 s: down within about 15 s of the last answer
    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> {
      assertThat(watchUp(metrics, "EgressService")).isZero();
      assertThat(agent.readiness().ok()).isFalse();
    });
    double noticed = (System.nanoTime() - hungAt) / 1e9;
    System.out.printf("a hung API server counted as down after %.1f s%n", noticed);
    assertThat(agent.readiness().detail()).contains("watch not running");
    assertThat(agent.liveness().ok()).as("a hung API server is no reason to restart the agent").isTrue();

    proxy.mode(ApiProxy.Mode.PASS);

    await().atMost(Duration.ofSeconds(40)).untilAsserted(() -> {
      assertThat(watchUp(metrics, "EgressService")).isEqualTo(1.0);
      assertThat(agent.readiness().ok()).isTrue();
    });
  }
}

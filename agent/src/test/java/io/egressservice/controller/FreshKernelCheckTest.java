package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.client.Config;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.net.InetAddress;
import java.time.Clock;
import java.time.Duration;
import java.util.HashMap;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The last time the kernel was checked against a plan from fresh objects: reconciles from a cache whose watches are
 * down repair the kernel but do not count, so the metric ages while the view is stale.
 */
@EnableKubernetesMockClient(crud = true)
class FreshKernelCheckTest {
  static final String FRESH = "egress_service_agent_last_fresh_kernel_check_timestamp_seconds";

  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("fresh");

  static double gauge(AgentMetrics metrics, String name, String kind) {
    for (MetricSnapshot s : metrics.registry().scrape()) {
      if (s instanceof GaugeSnapshot g && g.getMetadata().getName().equals(name)) {
        return g.getDataPoints().stream().filter(d -> kind == null || kind.equals(d.getLabels().get("kind")))
            .mapToDouble(GaugeSnapshot.GaugeDataPointSnapshot::getValue).findFirst().orElse(Double.NaN);
      }
    }
    return Double.NaN;
  }

  @Test
  void reconcilesFromAStaleCacheDoNotCountAsAFreshKernelCheck() throws Exception {
    KubernetesMockServer api = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new KubernetesCrudDispatcher(), false);
    api.init(InetAddress.getLoopbackAddress(), 0);
    kernel.closeLater(api::destroy);
    Config config = new ConfigBuilder(api.createClient().getConfiguration()).withWatchReconnectInterval(100)
        .withRequestRetryBackoffInterval(100).withRequestRetryBackoffLimit(0).withRequestTimeout(2000).build();
    KubernetesClient agentClient = kernel.closeLater(new KubernetesClientBuilder().withConfig(config).build());
    AgentMetrics metrics = new AgentMetrics();
    NodeAgent agent = kernel.start(agentClient,
        new NodeAgent.Settings("node-a", PlanConfig.defaults(), Duration.ofMillis(200), Duration.ofSeconds(1)),
        metrics, (es, type, reason, message) -> { });

    await().atMost(Duration.ofSeconds(15)).until(() -> gauge(metrics, FRESH, null) > 0);
    double before = gauge(metrics, FRESH, null);
    await().atMost(Duration.ofSeconds(5)).until(() -> gauge(metrics, FRESH, null) > before);

    api.destroy();
    await().atMost(Duration.ofSeconds(15))
        .until(() -> gauge(metrics, "egress_service_agent_api_watch_up", "Service") == 0);
    double lastFresh = gauge(metrics, FRESH, null);
    long reconciles = agent.reconcileCount();

    await().atMost(Duration.ofSeconds(10)).until(() -> agent.reconcileCount() >= reconciles + 3);
    assertThat(gauge(metrics, FRESH, null)).isEqualTo(lastFresh);
  }
}

package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.egressservice.metrics.AgentMetrics;
import io.fabric8.kubernetes.client.ConfigBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.prometheus.metrics.model.snapshots.GaugeSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.net.InetAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * With the API server gone the agent said nothing of its own and had no metric for
 * it. The mock API server is stopped and a new one started on the same address.
 */
class ApiConnectivityTest {
  final List<AutoCloseable> toClose = new ArrayList<>();
  final ListAppender<ILoggingEvent> log = new ListAppender<>();

  @AfterEach
  void tearDown() throws Exception {
    for (int i = toClose.size() - 1; i >= 0; i--) {
      toClose.get(i).close();
    }
  }

  static KubernetesMockServer server(int port) throws Exception {
    KubernetesMockServer s = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(),
        new KubernetesCrudDispatcher(), false);
    s.init(InetAddress.getLoopbackAddress(), port);
    return s;
  }

  static double gauge(AgentMetrics metrics, String name, String kind) {
    for (MetricSnapshot s : metrics.registry().scrape()) {
      if (s instanceof GaugeSnapshot g && g.getMetadata().getName().equals(name)) {
        return g.getDataPoints().stream().filter(d -> kind.equals(d.getLabels().get("kind")))
            .mapToDouble(GaugeSnapshot.GaugeDataPointSnapshot::getValue).findFirst().orElse(Double.NaN);
      }
    }
    return Double.NaN;
  }

  List<String> lines() {
    return log.list.stream().map(ILoggingEvent::getFormattedMessage).toList();
  }

  @Test
  void anUnreachableApiServerIsOneLineWithItsUrlTheErrorAndTheNextRetry() throws Exception {
    Logger logger = (Logger) LoggerFactory.getLogger(ApiConnectivity.class);
    log.start();
    logger.addAppender(log);
    toClose.add(() -> logger.detachAppender(log));
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
      port = s.getLocalPort(); // closed again: nothing listens there
    }
    String url = "http://127.0.0.1:" + port + "/";
    KubernetesClient client = new KubernetesClientBuilder().withConfig(new ConfigBuilder().withMasterUrl(url)
        .withWatchReconnectInterval(1000).withRequestRetryBackoffLimit(0).withRequestTimeout(2000).build()).build();
    toClose.add(client);
    ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO);
    toClose.add(informers);
    informers.start();
    await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(lines())
        .anyMatch(l -> l.startsWith("cannot reach the API server " + url + " (") && l.contains("list/watch): ")
            && l.contains("ConnectException") && l.contains("next retry in about ")));
    assertThat(log.list).as("the error's stack trace is left to debug")
        .filteredOn(e -> e.getLevel().isGreaterOrEqual(ch.qos.logback.classic.Level.INFO))
        .allSatisfy(e -> assertThat(e.getThrowableProxy()).isNull());
  }

  @Test
  void lossAndReturnOfTheApiServerAreLoggedAndMeasuredPerKind() throws Exception {
    Logger logger = (Logger) LoggerFactory.getLogger(ApiConnectivity.class);
    log.start();
    logger.addAppender(log);
    toClose.add(() -> logger.detachAppender(log));
    KubernetesMockServer first = server(0);
    int port = first.getPort();
    toClose.add(first::destroy);
    KubernetesClient client = new KubernetesClientBuilder().withConfig(new ConfigBuilder(first.createClient().getConfiguration())
        .withWatchReconnectInterval(100).withRequestRetryBackoffInterval(100).withRequestRetryBackoffLimit(1)
        .withRequestTimeout(2000).build()).build();
    toClose.add(client);
    ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO);
    toClose.add(informers);
    AgentMetrics metrics = new AgentMetrics();
    metrics.apiConnectivity(informers.connectivity());
    informers.start();
    await().atMost(Duration.ofSeconds(10)).untilAsserted(() -> assertThat(informers.connectivity().kinds())
        .containsExactly("EgressService", "Service", "EndpointSlice", "Node")
        .allSatisfy(kind -> assertThat(gauge(metrics, "egress_service_agent_api_watch_up", kind)).isEqualTo(1.0)));
    assertThat(gauge(metrics, "egress_service_agent_api_last_contact_age_seconds", "Node")).isLessThan(1.5);

    first.destroy();

    await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> assertThat(lines())
        .anyMatch(l -> l.startsWith("lost contact with the API server: no watch of ") && l.contains("Service")
            && l.contains("the kernel keeps what was applied")));
    assertThat(gauge(metrics, "egress_service_agent_api_watch_up", "Service")).isZero();
    String url = String.valueOf(client.getMasterUrl());
    assertThat(lines()).anyMatch(l -> l.startsWith("lost contact with the API server: no watch of ")
        && l.contains(" from " + url + " for "));
    assertThat(gauge(metrics, "egress_service_agent_api_last_contact_age_seconds", "Service")).isGreaterThanOrEqualTo(3.0);
    long warnings = log.list.stream().filter(e -> e.getLevel() == ch.qos.logback.classic.Level.WARN).count();

    KubernetesMockServer restored = server(port);
    toClose.add(restored::destroy);

    await().atMost(Duration.ofSeconds(30)).untilAsserted(() -> assertThat(lines())
        .anyMatch(l -> l.startsWith("API server reachable again after ")));
    assertThat(gauge(metrics, "egress_service_agent_api_watch_up", "Node")).isEqualTo(1.0);
    assertThat(gauge(metrics, "egress_service_agent_api_last_contact_age_seconds", "Node")).isLessThan(1.5);
    assertThat(lines().stream().filter(l -> l.startsWith("lost contact"))).hasSize(1);
    // the informers' retries during the outage: one warning per kind at most, not one per retry
    assertThat(warnings).isLessThanOrEqualTo(1 + informers.connectivity().kinds().size());
  }
}

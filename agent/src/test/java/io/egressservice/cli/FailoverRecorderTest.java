package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.allocator.Allocator;
import io.egressservice.model.ObjectRef;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import org.junit.jupiter.api.Test;

/** The allocator's failovers and host changes reach /metrics through the listener the commands register. */
class FailoverRecorderTest {
  private static String scrape(PrometheusRegistry registry) {
    return PrometheusTextFormatWriter.create().toDebugString(registry.scrape());
  }

  @Test
  void allocatorFailoverIsObservedInTheFailoverHistogram() {
    PrometheusRegistry registry = new PrometheusRegistry();
    Allocator.Listener listener = new FailoverRecorder(registry);

    listener.failover(new ObjectRef("shop", "web"), "node-a", "node-b", 1.2);

    assertThat(scrape(registry))
        .contains("egress_service_agent_failover_seconds_count 1")
        .contains("egress_service_agent_failover_seconds_bucket{le=\"1.5\"} 1")
        .contains("egress_service_agent_failover_seconds_bucket{le=\"1.0\"} 0");
  }

  @Test
  void hostChangeSetsTheServicesLastChangeTimestamp() {
    PrometheusRegistry registry = new PrometheusRegistry();
    Allocator.Listener listener = new FailoverRecorder(registry);

    listener.hostChanged(new ObjectRef("shop", "web"), "node-a", "node-b", 1_700_000_000L);

    assertThat(scrape(registry)).contains(
        "egress_service_agent_host_last_change_timestamp_seconds{service=\"web\",service_namespace=\"shop\"} 1.7E9");
  }
}

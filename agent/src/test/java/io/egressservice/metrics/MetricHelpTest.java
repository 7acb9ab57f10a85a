package io.egressservice.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import java.util.Map;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** What /metrics says about itself (HELP) matches what the agent does. */
class MetricHelpTest {
  private static Map<String, String> help() {
    return new AgentMetrics().registry().scrape().stream()
        .collect(Collectors.toMap(s -> s.getMetadata().getPrometheusName(), MetricSnapshot::getMetadata))
        .entrySet().stream().collect(Collectors.toMap(Map.Entry::getKey, e -> e.getValue().getHelp()));
  }

  @Test
  void reconcileIntervalHelpSaysTheActualMinimum() {
    // Pacing: reconciles start at least 25 ms apart (it said 0.05 s, the interval before)
    assertThat(help().get("egress_service_agent_reconcile_interval_seconds")).contains("0.025 s").doesNotContain("0.05 s");
  }

  @Test
  void reconcileDurationHelpDocumentsEveryTrigger() {
    assertThat(help().get("egress_service_agent_reconcile_duration_seconds"))
        .contains("trigger", "startup", "api", "resync", "kernel", "retry");
  }
}

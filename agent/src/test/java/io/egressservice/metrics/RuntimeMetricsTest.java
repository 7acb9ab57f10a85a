package io.egressservice.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.buildinfo.BuildInfo;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The runtime metrics every process exposes besides its own. */
class RuntimeMetricsTest {
  /** The value of {@code jvm_allocated_bytes_total} as /metrics writes it (bench/scale.sh reads it there). */
  private static double allocatedBytes(PrometheusRegistry registry) {
    String text = PrometheusTextFormatWriter.create().toDebugString(registry.scrape());
    return text.lines().filter(l -> l.startsWith("jvm_allocated_bytes_total "))
        .mapToDouble(l -> Double.parseDouble(l.substring(l.indexOf(' ') + 1)))
        .findFirst().orElseThrow(() -> new AssertionError("no jvm_allocated_bytes_total in\n" + text));
  }

  @Test
  void allocatedBytesGrowByWhatThisJvmAllocates() {
    PrometheusRegistry registry = new PrometheusRegistry();
    RuntimeMetrics.register(registry, BuildInfo.current());
    double before = allocatedBytes(registry);
    List<byte[]> kept = new ArrayList<>();
    for (int i = 0; i < 64; i++) {
      kept.add(new byte[64 * 1024]);
    }
    double after = allocatedBytes(registry);
    assertThat(kept).hasSize(64);
    assertThat(before).isPositive();
    assertThat(after - before).isGreaterThanOrEqualTo(64 * 64 * 1024);
  }
}

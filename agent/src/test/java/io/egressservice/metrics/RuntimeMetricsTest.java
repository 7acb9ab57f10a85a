package io.egressservice.metrics;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.buildinfo.BuildInfo;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import com.sun.jna.Memory;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
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

  private static double nativeHeap(PrometheusRegistry registry, String state) {
    String text = PrometheusTextFormatWriter.create().toDebugString(registry.scrape());
    String prefix = "egress_service_agent_native_heap_bytes{state=\"" + state + "\"} ";
    return text.lines().filter(l -> l.startsWith(prefix))
        .mapToDouble(l -> Double.parseDouble(l.substring(prefix.length())))
        .findFirst().orElseThrow(() -> new AssertionError("no " + prefix + "in\n" + text));
  }

  @Test
  void theNativeHeapGaugeFollowsWhatIsMallocatedAndFreed() {
    Assumptions.assumeTrue(NativeHeapMetrics.read().isPresent(), "libc has no mallinfo2 (not glibc 2.33+)");
    PrometheusRegistry registry = new PrometheusRegistry();
    RuntimeMetrics.register(registry, BuildInfo.current());
    double before = nativeHeap(registry, "in_use");
    long size = 48L << 20;
    try (Memory block = new Memory(size)) { // JNA's Memory is malloc'd
      block.setByte(size - 1, (byte) 1);
      // within a few MiB: the JVM mallocs and frees of its own meanwhile
      assertThat(nativeHeap(registry, "in_use") - before).isGreaterThan(size * 0.9);
    }
    assertThat(nativeHeap(registry, "in_use") - before).as("freed again").isLessThan(size * 0.5);
    assertThat(nativeHeap(registry, "free")).isNotNegative();
  }
}

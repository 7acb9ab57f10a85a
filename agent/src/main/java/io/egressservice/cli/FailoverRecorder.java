package io.egressservice.cli;

import io.egressservice.allocator.Allocator;
import io.egressservice.metrics.FailoverMetrics;
import io.egressservice.model.ObjectRef;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * Hands the allocator's failovers and host changes to {@link FailoverMetrics}. The adapter lives here, where both are
 * built, so that {@code metrics} imports nothing of the allocator above it.
 */
final class FailoverRecorder implements Allocator.Listener {
  private final FailoverMetrics metrics;

  /** Registers the failover metrics in {@code registry}. */
  FailoverRecorder(PrometheusRegistry registry) {
    this.metrics = new FailoverMetrics(registry);
  }

  @Override
  public void failover(ObjectRef service, String from, String to, double seconds) {
    metrics.failover(service, from, to, seconds);
  }

  @Override
  public void hostChanged(ObjectRef service, String from, String to, long epochSeconds) {
    metrics.hostChanged(service, from, to, epochSeconds);
  }
}

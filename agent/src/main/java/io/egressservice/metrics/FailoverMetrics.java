package io.egressservice.metrics;

import io.egressservice.model.ObjectRef;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/**
 * The allocator's failover metrics: {@code egress_service_agent_failover_seconds} (a host's last answer to its
 * health probes -> the service's new {@code status.host} written) and {@code
 * egress_service_agent_host_last_change_timestamp_seconds{service_namespace,service}}.
 *
 * <p>It knows nothing of the allocator (metrics sits below it): whoever builds both hands the allocator's failovers
 * and host changes in (cli's {@code FailoverRecorder}).
 */
public final class FailoverMetrics {
  private final Histogram failover;
  private final Gauge lastChange;

  public FailoverMetrics(PrometheusRegistry registry) {
    failover = Histogram.builder()
        .name("egress_service_agent_failover_seconds")
        .help("From an unreachable host's last answer to its health probes to the new status.host of each of its "
            + "services written")
        .classicUpperBounds(0.5, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 15, 30, 60)
        .register(registry);
    lastChange = Gauge.builder()
        .name("egress_service_agent_host_last_change_timestamp_seconds")
        .help("When the allocator last wrote a different status.host of the service (Unix time)")
        .labelNames("service_namespace", "service")
        .register(registry);
  }

  /** A service left an unreachable host after {@code seconds} (the host's last answer -> status.host written). */
  public void failover(ObjectRef service, String from, String to, double seconds) {
    failover.observe(seconds);
  }

  /** The allocator wrote a different status.host of {@code service} at {@code epochSeconds}. */
  public void hostChanged(ObjectRef service, String from, String to, long epochSeconds) {
    lastChange.labelValues(service.namespace(), service.name()).set(epochSeconds);
  }
}

package io.egressservice.metrics;

import io.egressservice.informers.SilentWatches;
import io.prometheus.metrics.core.metrics.CounterWithCallback;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.model.registry.PrometheusRegistry;

/** How fresh each watch is and how often one was re-opened, read from the process's {@link SilentWatches}. */
public final class ApiWatchMetrics {
  private ApiWatchMetrics() {}

  /** Registers both series on {@code registry}: once per registry and process. */
  public static void register(PrometheusRegistry registry, SilentWatches watches) {
    GaugeWithCallback.builder()
        .name("egress_service_agent_api_watch_idle_seconds")
        .help("Seconds since the watch of this resource (its API path) last received an event or a bookmark, or"
            + " was opened; a watch idle for --api-watch-idle-timeout is re-opened on a new connection.")
        .labelNames("resource")
        .callback(cb -> watches.idleSeconds().forEach((resource, age) -> cb.call(age, resource)))
        .register(registry);
    CounterWithCallback.builder()
        .name("egress_service_agent_api_watch_reopened_total")
        .help("Watches ended by the agent: reason silent (no frame for the idle timeout: re-opened on a new"
            + " connection) or gone_handshake (410 Gone as the HTTP status of its handshake: the informer lists again).")
        .labelNames("reason")
        .callback(cb -> {
          cb.call(watches.abandoned(), "silent");
          cb.call(watches.goneHandshakes(), "gone_handshake");
        })
        .register(registry);
  }
}

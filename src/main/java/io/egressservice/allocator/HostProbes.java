package io.egressservice.allocator;

import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How the allocator probes the agents of the nodes that host services ({@code GET /healthz} on the node's
 * InternalIP and the agents' metrics port).
 *
 * @param enabled off: only the Node's Ready condition counts (as before; for clusters where the allocator cannot
 *     reach the nodes' metrics port)
 * @param port the agents' metrics port (the DaemonSet's {@code --metrics-port})
 * @param interval how often each probed node is probed (probes may overlap)
 * @param timeout connect plus answer
 * @param threads probes in flight at most
 * @param netns tests: create the probe sockets in this network namespace
 * @param health when a node counts as unreachable, and when again as reachable
 */
public record HostProbes(boolean enabled, int port, Duration interval, Duration timeout, int threads,
    Optional<String> netns, HostHealth.Settings health) {
  public static final int DEFAULT_PORT = 9464;

  public HostProbes {
    Objects.requireNonNull(interval);
    Objects.requireNonNull(timeout);
    Objects.requireNonNull(netns);
    Objects.requireNonNull(health);
    if (enabled && (port < 1 || port > 65535)) {
      throw new IllegalArgumentException("host probe port must be 1-65535, not " + port);
    }
    if (interval.isNegative() || interval.isZero() || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("host probe interval and timeout must be positive");
    }
    if (threads < 1) {
      throw new IllegalArgumentException("host probe threads must be at least 1");
    }
  }

  /** Every 500 ms with a 1 s timeout, unreachable after 2 unanswered probes (at most about 1.5 s + 0.5 s). */
  public static HostProbes defaults() {
    return new HostProbes(true, DEFAULT_PORT, Duration.ofMillis(500), Duration.ofSeconds(1), 8, Optional.empty(),
        HostHealth.Settings.defaults());
  }

  public static HostProbes off() {
    return new HostProbes(false, DEFAULT_PORT, Duration.ofMillis(500), Duration.ofSeconds(1), 1, Optional.empty(),
        HostHealth.Settings.defaults());
  }
}

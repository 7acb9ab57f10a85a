package io.egressservice.allocator;

import io.egressservice.health.ProbeKeys;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * How the allocator probes the agents of the nodes that host services (and of a few candidate hosts) ({@code GET /healthz} on the node's
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
 * @param candidates how many Ready nodes that host nothing are probed besides the hosts (sorted by name): their
 *     health is known before a service moves to one, and they are the population the allocator judges itself by
 *     (when most probed nodes fail at once it suspects its own path, {@link HostHealth})
 * @param keys the probe key the agents prove their answers with ({@link AgentProber}); none: answers are taken by the
 *     node they name, unproved
 * @param proofs which answers without a valid proof still count, while there is a key
 */
public record HostProbes(boolean enabled, int port, Duration interval, Duration timeout, int threads,
    Optional<String> netns, HostHealth.Settings health, int candidates, ProbeKeys keys, ProofMode proofs) {
  public static final int DEFAULT_PORT = 9464;
  /** Enough for a majority to mean something, few enough that probing stays O(hosts). */
  public static final int DEFAULT_CANDIDATES = 8;

  /**
   * What an answer without a valid proof is worth while the allocator has a key. Either way an answer that names
   * another node, or a proof that does not verify, counts as refused (the node is up, its agent is not proven).
   */
  public enum ProofMode {
    /** Only proven answers speak for an agent: for a cluster whose agents all have the key. */
    REQUIRE,
    /**
     * A node whose agent has proven an answer to this allocator must go on proving; one that never has (an agent
     * older than the proofs, or whose pod has not received the key yet) is taken by the node its answer names, as
     * before the proofs. For an upgrade, and for a key that has just been created.
     */
    LEARN
  }

  /** Without a probe key. */
  public HostProbes(boolean enabled, int port, Duration interval, Duration timeout, int threads,
      Optional<String> netns, HostHealth.Settings health, int candidates) {
    this(enabled, port, interval, timeout, threads, netns, health, candidates, ProbeKeys.none(), ProofMode.REQUIRE);
  }

  /** With {@link #DEFAULT_CANDIDATES}, without a probe key. */
  public HostProbes(boolean enabled, int port, Duration interval, Duration timeout, int threads,
      Optional<String> netns, HostHealth.Settings health) {
    this(enabled, port, interval, timeout, threads, netns, health, DEFAULT_CANDIDATES);
  }

  public HostProbes {
    Objects.requireNonNull(interval);
    Objects.requireNonNull(timeout);
    Objects.requireNonNull(netns);
    Objects.requireNonNull(health);
    Objects.requireNonNull(keys);
    Objects.requireNonNull(proofs);
    if (enabled && (port < 1 || port > 65535)) {
      throw new IllegalArgumentException("host probe port must be 1-65535, not " + port);
    }
    if (interval.isNegative() || interval.isZero() || timeout.isNegative() || timeout.isZero()) {
      throw new IllegalArgumentException("host probe interval and timeout must be positive");
    }
    if (threads < 1) {
      throw new IllegalArgumentException("host probe threads must be at least 1");
    }
    if (candidates < 0) {
      throw new IllegalArgumentException("host probe candidates must not be negative, not " + candidates);
    }
  }

  /**
   * Every 500 ms with a 1 s timeout, unreachable after 2 unanswered probes (at most about 1.5 s + 0.5 s); up to 32
   * probes in flight (a silent node holds two: a probe every 500 ms, each waiting 1 s).
   */
  public static HostProbes defaults() {
    return new HostProbes(true, DEFAULT_PORT, Duration.ofMillis(500), Duration.ofSeconds(1), 32, Optional.empty(),
        HostHealth.Settings.defaults());
  }

  /** The same probes, their answers proved under {@code k} as {@code mode} says. */
  public HostProbes withKeys(ProbeKeys k, ProofMode mode) {
    return new HostProbes(enabled, port, interval, timeout, threads, netns, health, candidates, k, mode);
  }

  public static HostProbes off() {
    return new HostProbes(false, DEFAULT_PORT, Duration.ofMillis(500), Duration.ofSeconds(1), 1, Optional.empty(),
        HostHealth.Settings.defaults());
  }
}

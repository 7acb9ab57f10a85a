package io.egressservice.allocator;

import io.egressservice.plan.EndpointTrust;
import java.time.Duration;
import java.util.Objects;

/**
 * Timings of the allocator.
 *
 * @param leaseName the {@code coordination.k8s.io/v1} Lease the replicas compete for
 * @param leaseDuration how long a follower waits after the last renewal before taking over
 * @param renewDeadline how long the leader keeps trying to renew before it stops leading (less than leaseDuration,
 *     so the old leader stops writing before anyone else can start)
 * @param retryPeriod interval of acquisition and renewal attempts
 * @param resyncPeriod informer resync; a resync recomputes everything but writes only differences
 * @param probes health probes of the hosts' agents (failover within seconds instead of the Node's NotReady)
 * @param endpointTrust whose EndpointSlices count when choosing a host (the node agents' {@code
 *     --trusted-endpoint-managers})
 * @param plannedMoves how long a planned move waits for the new host, and how long the old one keeps receiving
 */
public record AllocatorConfig(
    String leaseName, Duration leaseDuration, Duration renewDeadline, Duration retryPeriod, Duration resyncPeriod,
    HostProbes probes, EndpointTrust endpointTrust, PlannedMoveSettings plannedMoves) {
  public static final String DEFAULT_LEASE_NAME = "egress-service-allocator";

  /** Without host probes, trusting the EndpointSlice controller only. */
  public AllocatorConfig(
      String leaseName, Duration leaseDuration, Duration renewDeadline, Duration retryPeriod, Duration resyncPeriod) {
    this(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, HostProbes.off(),
        EndpointTrust.kubernetesOnly());
  }

  public AllocatorConfig(String leaseName, Duration leaseDuration, Duration renewDeadline, Duration retryPeriod,
      Duration resyncPeriod, HostProbes probes, EndpointTrust endpointTrust) {
    this(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, probes, endpointTrust,
        PlannedMoveSettings.defaults());
  }

  public AllocatorConfig {
    Objects.requireNonNull(plannedMoves);
    Objects.requireNonNull(leaseName);
    Objects.requireNonNull(probes);
    Objects.requireNonNull(endpointTrust);
    if (renewDeadline.compareTo(leaseDuration) >= 0) {
      throw new IllegalArgumentException("renewDeadline must be shorter than leaseDuration");
    }
    if (retryPeriod.compareTo(renewDeadline) >= 0) {
      throw new IllegalArgumentException("retryPeriod must be shorter than renewDeadline");
    }
  }

  /** The client-go defaults: lease 15 s, renew 10 s, retry 2 s; resync 60 s; host probes on. */
  public static AllocatorConfig defaults() {
    return new AllocatorConfig(DEFAULT_LEASE_NAME, Duration.ofSeconds(15), Duration.ofSeconds(10),
        Duration.ofSeconds(2), Duration.ofSeconds(60), HostProbes.defaults(), EndpointTrust.kubernetesOnly());
  }

  public AllocatorConfig withLease(Duration lease, Duration renew, Duration retry) {
    return new AllocatorConfig(leaseName, lease, renew, retry, resyncPeriod, probes, endpointTrust, plannedMoves);
  }

  public AllocatorConfig withProbes(HostProbes p) {
    return new AllocatorConfig(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, p, endpointTrust,
        plannedMoves);
  }

  public AllocatorConfig withEndpointTrust(EndpointTrust trust) {
    return new AllocatorConfig(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, probes, trust,
        plannedMoves);
  }

  public AllocatorConfig withPlannedMoves(PlannedMoveSettings moves) {
    return new AllocatorConfig(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, probes,
        endpointTrust, moves);
  }
}

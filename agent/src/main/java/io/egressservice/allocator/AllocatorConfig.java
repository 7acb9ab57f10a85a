package io.egressservice.allocator;

import io.egressservice.model.EndpointTrust;
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
    HostProbes probes, EndpointTrust endpointTrust, PlannedMoveSettings plannedMoves, boolean grantPolicyEnforced) {
  public static final String DEFAULT_LEASE_NAME = "egress-service-allocator";

  /** The EgressServicePolicy not enforced. */
  public AllocatorConfig(String leaseName, Duration leaseDuration, Duration renewDeadline, Duration retryPeriod,
      Duration resyncPeriod, HostProbes probes, EndpointTrust endpointTrust, PlannedMoveSettings plannedMoves) {
    this(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, probes, endpointTrust, plannedMoves,
        false);
  }

  /**
   * {@code --egress-service-policy=enforce}: an allocator with informers of its own also watches Namespaces and the
   * EgressServicePolicy (one on shared informers follows theirs).
   */
  public AllocatorConfig withGrantPolicy(boolean enforced) {
    return new AllocatorConfig(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, probes,
        endpointTrust, plannedMoves, enforced);
  }

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

  public static final Duration DEFAULT_LEASE_DURATION = Duration.ofSeconds(5);
  public static final Duration DEFAULT_RENEW_DEADLINE = Duration.ofSeconds(3);
  public static final Duration DEFAULT_RETRY_PERIOD = Duration.ofSeconds(1);

  /**
   * kube-vip's lease (5 s, renew deadline 3 s, retry 1 s) rather than client-go's 15/10/2: a leader that dies with
   * the host it watches is replaced within about 5-7 s, and every replica probes the hosts, so the new leader acts
   * at once. It costs the leader about one Lease write a second (deploy/README.md). Resync 60 s; host probes on.
   */
  public static AllocatorConfig defaults() {
    return new AllocatorConfig(DEFAULT_LEASE_NAME, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE,
        DEFAULT_RETRY_PERIOD, Duration.ofSeconds(60), HostProbes.defaults(), EndpointTrust.kubernetesOnly());
  }

  public AllocatorConfig withLease(Duration lease, Duration renew, Duration retry) {
    return new AllocatorConfig(leaseName, lease, renew, retry, resyncPeriod, probes, endpointTrust, plannedMoves,
        grantPolicyEnforced);
  }

  public AllocatorConfig withProbes(HostProbes p) {
    return new AllocatorConfig(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, p, endpointTrust,
        plannedMoves, grantPolicyEnforced);
  }

  public AllocatorConfig withEndpointTrust(EndpointTrust trust) {
    return new AllocatorConfig(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, probes, trust,
        plannedMoves, grantPolicyEnforced);
  }

  public AllocatorConfig withPlannedMoves(PlannedMoveSettings moves) {
    return new AllocatorConfig(leaseName, leaseDuration, renewDeadline, retryPeriod, resyncPeriod, probes,
        endpointTrust, moves, grantPolicyEnforced);
  }
}

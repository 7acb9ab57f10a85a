package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.util.List;

/**
 * What the plan decided for one EgressService on this node, in words a person can act on.
 *
 * @param configured whether this node applies anything for the service
 * @param reason why (or why not); one sentence
 * @param skippedEndpoints endpoints the service names but this node will not touch, each with why
 * @param remoteEndpoints LoadBalancerIP mode: endpoints on other nodes that are not steered here (with
 *     {@code --remote-endpoints=report}, or a family the host has no InternalIP of), whose egress takes
 *     the host's rules only if the pod network steers it to the host; on a node that steers, its local
 *     endpoints of such a family
 * @param steeredEndpoints on a node that is not the host: the local endpoints it steers to the host
 * @param steeredIn on the host: endpoints on other nodes that those nodes steer here
 * @param tunnelSenders on a receiving node: the (outer node address, inner source) pairs its steering port accepts
 *     for this service: each steered-in endpoint from its own Node's InternalIPs and, during a planned move, the LB
 *     IP from the other receiving nodes that have endpoints (see {@link TunnelSender})
 * @param warnings on a node that acts for the service: what is wrong although it is configured, e.g. the pod network
 *     of a family its endpoints use is unknown, so their in-cluster traffic is treated as leaving the cluster
 */
public record ServiceOutcome(
    ObjectRef service,
    boolean configured,
    String reason,
    List<SkippedEndpoint> skippedEndpoints,
    List<String> remoteEndpoints,
    List<SteeredEndpoint> steeredEndpoints,
    List<String> steeredIn,
    List<TunnelSender> tunnelSenders,
    List<String> warnings) {
  public ServiceOutcome {
    warnings = List.copyOf(warnings);
    skippedEndpoints = List.copyOf(skippedEndpoints);
    remoteEndpoints = List.copyOf(remoteEndpoints);
    steeredEndpoints = List.copyOf(steeredEndpoints);
    steeredIn = List.copyOf(steeredIn);
    tunnelSenders = List.copyOf(tunnelSenders);
  }

  /** An outcome without warnings. */
  public ServiceOutcome(ObjectRef service, boolean configured, String reason, List<SkippedEndpoint> skippedEndpoints,
      List<String> remoteEndpoints, List<SteeredEndpoint> steeredEndpoints, List<String> steeredIn,
      List<TunnelSender> tunnelSenders) {
    this(service, configured, reason, skippedEndpoints, remoteEndpoints, steeredEndpoints, steeredIn, tunnelSenders,
        List.of());
  }

  /** This outcome with {@code more} warnings. */
  public ServiceOutcome withWarnings(List<String> more) {
    if (more.isEmpty()) {
      return this;
    }
    List<String> all = new java.util.ArrayList<>(warnings);
    all.addAll(more);
    return new ServiceOutcome(service, configured, reason, skippedEndpoints, remoteEndpoints, steeredEndpoints,
        steeredIn, tunnelSenders, all);
  }

  /** An outcome whose steering port accepts no tunnel sender for it. */
  public ServiceOutcome(ObjectRef service, boolean configured, String reason, List<SkippedEndpoint> skippedEndpoints,
      List<String> remoteEndpoints, List<SteeredEndpoint> steeredEndpoints, List<String> steeredIn) {
    this(service, configured, reason, skippedEndpoints, remoteEndpoints, steeredEndpoints, steeredIn, List.of());
  }

  /** An outcome without steering. */
  public ServiceOutcome(ObjectRef service, boolean configured, String reason, List<SkippedEndpoint> skippedEndpoints,
      List<String> remoteEndpoints) {
    this(service, configured, reason, skippedEndpoints, remoteEndpoints, List.of(), List.of());
  }

  public record SkippedEndpoint(String address, String reason) {}
}

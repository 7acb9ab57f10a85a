package io.egressservice.plan;

import java.util.List;

/**
 * What the plan decided for one EgressService on this node, in words a person can act on.
 *
 * @param configured whether this node applies anything for the service
 * @param reason why (or why not); one sentence
 * @param skippedEndpoints endpoints the service names but this node will not touch, each with why
 * @param remoteEndpoints LoadBalancerIP mode: endpoints on other nodes, whose egress takes the host's
 *     rules only if the pod network steers it to the host
 */
public record ServiceOutcome(
    ObjectRef service,
    boolean configured,
    String reason,
    List<SkippedEndpoint> skippedEndpoints,
    List<String> remoteEndpoints) {
  public ServiceOutcome {
    skippedEndpoints = List.copyOf(skippedEndpoints);
    remoteEndpoints = List.copyOf(remoteEndpoints);
  }

  public record SkippedEndpoint(String address, String reason) {}
}

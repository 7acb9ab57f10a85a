package io.egressservice.plan;

import java.util.List;

/**
 * Steering on this node: the local endpoints it sends to their service's host (each also has a rule,
 * or in mark mode a mark, in the plan's rules), the steering tables' routes, and whether the agent's
 * device is needed at all: to send (routes) or, on a host, to receive endpoints other nodes steer here.
 *
 * @param port the device's UDP port ({@code --steer-port}), the same on every node
 * @param peers the Nodes that may send to that port (node-wide: any Node change plans everything)
 */
public record SteeringPlan(List<SteeredEndpoint> endpoints, List<SteerRoute> routes, boolean receives, int port,
    SteeringPeers peers) {
  /** The one device the agent owns for steering; tagged with {@link #DEVICE_ALIAS}. */
  public static final String DEVICE = "egress-vx";
  public static final String DEVICE_ALIAS = "egress-service-agent";
  /** The VXLAN network identifier of every steered packet (the device is alone on its port). */
  public static final long VNI = 1;

  public SteeringPlan {
    endpoints = PlanSlots.frozen(endpoints);
    routes = List.copyOf(routes);
    java.util.Objects.requireNonNull(peers, "peers");
  }

  /** Without peers (steering off, or a part of a plan that leaves the node-wide peers aside). */
  public SteeringPlan(List<SteeredEndpoint> endpoints, List<SteerRoute> routes, boolean receives, int port) {
    this(endpoints, routes, receives, port, SteeringPeers.NONE);
  }

  public static SteeringPlan none(int port) {
    return new SteeringPlan(List.of(), List.of(), false, port);
  }

  public boolean deviceWanted() {
    return !routes.isEmpty() || receives;
  }
}

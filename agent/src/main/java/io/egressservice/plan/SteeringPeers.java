package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.List;

/**
 * Who may use the steering port, and where pods must not reach it: with {@code --remote-endpoints=steer}, the
 * InternalIPs of every Node (the only outer sources a node accepts VXLAN-GPE from) and every address of every Node
 * (InternalIP and ExternalIP: forwarded packets to their steering port are dropped, so a pod cannot reach it through
 * its node's masquerade). Both sorted, hosts only.
 *
 * @param steers whether steering is on ({@code --remote-endpoints=steer}); off, the lists are empty
 */
public record SteeringPeers(boolean steers, List<IpPrefix> nodeInternalIps, List<IpPrefix> nodeAddresses) {
  /** Steering off ({@code --remote-endpoints=report}): no port to guard. */
  public static final SteeringPeers NONE = new SteeringPeers(false, List.of(), List.of());

  public SteeringPeers {
    nodeInternalIps = List.copyOf(nodeInternalIps);
    nodeAddresses = List.copyOf(nodeAddresses);
  }
}

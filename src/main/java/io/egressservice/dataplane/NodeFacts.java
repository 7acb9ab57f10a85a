package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.NetworkResolution;
import java.util.List;

/** What the plan needs observed on the node itself (DESIGN.md section 1): networks and connected subnets. */
public record NodeFacts(NetworkResolution networks, List<IpPrefix> connectedSubnets) {
  public NodeFacts {
    connectedSubnets = List.copyOf(connectedSubnets);
  }
}

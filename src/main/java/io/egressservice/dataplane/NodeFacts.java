package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.NetworkResolution;
import java.util.List;
import java.util.Map;

/**
 * What the plan needs observed on the node itself (DESIGN.md section 1): networks, connected subnets,
 * and in mark mode the marks the kernel already uses per table.
 */
public record NodeFacts(NetworkResolution networks, List<IpPrefix> connectedSubnets, Map<Long, Long> existingMarks) {
  public NodeFacts {
    connectedSubnets = List.copyOf(connectedSubnets);
    existingMarks = Map.copyOf(existingMarks);
  }
}

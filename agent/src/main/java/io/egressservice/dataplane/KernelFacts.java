package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.NetworkResolution;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the plan needs observed on the node itself (DESIGN.md section 1): networks, the addresses on
 * the node's interfaces, in mark mode the marks the kernel already uses per table, and the steering
 * tables' hosts.
 */
public record KernelFacts(NetworkResolution networks, List<IpPrefix> localAddresses, Map<Long, Long> existingMarks,
    Map<Long, Set<IpPrefix>> existingSteerTables) {
  public KernelFacts {
    localAddresses = List.copyOf(localAddresses);
    existingMarks = Map.copyOf(existingMarks);
    existingSteerTables = Map.copyOf(existingSteerTables);
  }
}

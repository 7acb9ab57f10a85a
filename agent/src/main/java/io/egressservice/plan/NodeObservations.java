package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;
import java.util.Set;

/** What the plan reads of the node itself, as {@link NodeInputs} holds it (see there). */
public record NodeObservations(List<IpPrefix> localAddresses, NetworkResolution networks,
    Map<Long, Long> existingMarks, Map<Long, Set<IpPrefix>> existingSteerTables) {
  public NodeObservations {
    localAddresses = List.copyOf(localAddresses);
    existingMarks = Map.copyOf(existingMarks);
    existingSteerTables = Map.copyOf(existingSteerTables);
  }
}

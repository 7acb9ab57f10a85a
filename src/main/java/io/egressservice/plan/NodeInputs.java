package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;

/**
 * Everything the plan reads: the cluster's objects as this node sees them, what was observed on the
 * node, and the configuration.
 *
 * @param connectedSubnets the node's directly connected subnets (observed; empty offline): those that
 *     hold Node addresses become in-cluster destinations of the P-1 rules
 * @param existingMarks mark mode: table id to mark value as the kernel already has them (owned
 *     fwmark rules), so marks stay stable across restarts; empty offline
 */
public record NodeInputs(
    String nodeName,
    List<EgressServiceInfo> egressServices,
    List<ServiceInfo> services,
    List<EndpointSliceInfo> endpointSlices,
    List<NodeInfo> nodes,
    List<IpPrefix> connectedSubnets,
    NetworkResolution networks,
    PlanConfig config,
    Map<Long, Long> existingMarks) {
  public NodeInputs(String nodeName, List<EgressServiceInfo> egressServices, List<ServiceInfo> services,
      List<EndpointSliceInfo> endpointSlices, List<NodeInfo> nodes, List<IpPrefix> connectedSubnets,
      NetworkResolution networks, PlanConfig config) {
    this(nodeName, egressServices, services, endpointSlices, nodes, connectedSubnets, networks, config, Map.of());
  }

  public NodeInputs {
    existingMarks = Map.copyOf(existingMarks);
    egressServices = List.copyOf(egressServices);
    services = List.copyOf(services);
    endpointSlices = List.copyOf(endpointSlices);
    nodes = List.copyOf(nodes);
    connectedSubnets = List.copyOf(connectedSubnets);
  }
}

package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.List;

/**
 * Everything the plan reads: the cluster's objects as this node sees them, what was observed on the
 * node, and the configuration.
 *
 * @param connectedSubnets the node's directly connected subnets (observed; empty offline): those that
 *     hold Node addresses become in-cluster destinations of the P-1 rules
 */
public record NodeInputs(
    String nodeName,
    List<EgressServiceInfo> egressServices,
    List<ServiceInfo> services,
    List<EndpointSliceInfo> endpointSlices,
    List<NodeInfo> nodes,
    List<IpPrefix> connectedSubnets,
    NetworkResolution networks,
    PlanConfig config) {
  public NodeInputs {
    egressServices = List.copyOf(egressServices);
    services = List.copyOf(services);
    endpointSlices = List.copyOf(endpointSlices);
    nodes = List.copyOf(nodes);
    connectedSubnets = List.copyOf(connectedSubnets);
  }
}

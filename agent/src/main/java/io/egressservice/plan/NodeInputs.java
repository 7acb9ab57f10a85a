package io.egressservice.plan;

import io.egressservice.model.PlanConfig;
import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Everything the plan reads: the cluster's objects as this node sees them, what was observed on the
 * node, and the configuration.
 *
 * @param localAddresses every address the kernel shows on the node's interfaces (observed, as host
 *     prefixes; empty offline): never endpoints, and in-cluster destinations by exact address, like the
 *     Node objects' addresses (a node has addresses its Node object does not list)
 * @param existingMarks mark mode: table id to mark value as the kernel already has them (owned
 *     fwmark rules), so marks stay stable across restarts; empty offline
 * @param existingSteerTables steering table id to the host addresses its routes lead to, as the kernel
 *     has them (owned routes over the agent's device), so a host keeps its table; empty offline
 * @param grantPolicy which namespaces may use which networks ({@code --egress-service-policy}); off by default
 * @param namespaces the Namespaces' labels, which the grants select by (read only when the policy is enforced)
 */
public record NodeInputs(
    String nodeName,
    List<EgressServiceInfo> egressServices,
    List<ServiceInfo> services,
    List<EndpointSliceInfo> endpointSlices,
    List<NodeInfo> nodes,
    List<IpPrefix> localAddresses,
    NetworkResolution networks,
    PlanConfig config,
    Map<Long, Long> existingMarks,
    Map<Long, Set<IpPrefix>> existingSteerTables,
    GrantPolicy grantPolicy,
    List<NamespaceInfo> namespaces) {
  /** Without a policy (every network allowed). */
  public NodeInputs(String nodeName, List<EgressServiceInfo> egressServices, List<ServiceInfo> services,
      List<EndpointSliceInfo> endpointSlices, List<NodeInfo> nodes, List<IpPrefix> localAddresses,
      NetworkResolution networks, PlanConfig config, Map<Long, Long> existingMarks,
      Map<Long, Set<IpPrefix>> existingSteerTables) {
    this(nodeName, egressServices, services, endpointSlices, nodes, localAddresses, networks, config, existingMarks,
        existingSteerTables, GrantPolicy.off(), List.of());
  }

  public NodeInputs(String nodeName, List<EgressServiceInfo> egressServices, List<ServiceInfo> services,
      List<EndpointSliceInfo> endpointSlices, List<NodeInfo> nodes, List<IpPrefix> localAddresses,
      NetworkResolution networks, PlanConfig config, Map<Long, Long> existingMarks) {
    this(nodeName, egressServices, services, endpointSlices, nodes, localAddresses, networks, config, existingMarks,
        Map.of());
  }

  public NodeInputs(String nodeName, List<EgressServiceInfo> egressServices, List<ServiceInfo> services,
      List<EndpointSliceInfo> endpointSlices, List<NodeInfo> nodes, List<IpPrefix> localAddresses,
      NetworkResolution networks, PlanConfig config) {
    this(nodeName, egressServices, services, endpointSlices, nodes, localAddresses, networks, config, Map.of());
  }

  public NodeInputs {
    existingMarks = Map.copyOf(existingMarks);
    existingSteerTables = Map.copyOf(existingSteerTables);
    egressServices = List.copyOf(egressServices);
    services = List.copyOf(services);
    endpointSlices = List.copyOf(endpointSlices);
    nodes = List.copyOf(nodes);
    localAddresses = List.copyOf(localAddresses);
    java.util.Objects.requireNonNull(grantPolicy, "grantPolicy");
    namespaces = List.copyOf(namespaces);
  }

  /** The same inputs under another policy, with these Namespaces. */
  public NodeInputs withGrants(GrantPolicy policy, List<NamespaceInfo> namespaceList) {
    return new NodeInputs(nodeName, egressServices, services, endpointSlices, nodes, localAddresses, networks, config,
        existingMarks, existingSteerTables, policy, namespaceList);
  }
}

package io.egressservice.allocator;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Predicate;

/**
 * Chooses {@code status.host} for one EgressService. Pure: no API calls, no clock, no randomness.
 *
 * <p>{@code sourceIPBy: Network} gives {@code ALL}. Otherwise the Service must be a LoadBalancer with at least one
 * ingress IP, and the host is chosen among the <em>candidate</em> nodes: Ready, reachable (its agent answers the
 * allocator's health probes, {@link HostHealth}), not cordoned ({@code spec.unschedulable}), not being deleted, matching {@code spec.nodeSelector}, and hosting at least one
 * pod-network endpoint of the service ({@code endpoint.nodeName}; an address that is a Node address or lies outside
 * every node's pod CIDRs is a host-network endpoint and does not count). The current host is kept while it is a
 * candidate; otherwise the candidate with the most endpoints wins, then the one with the fewest services already
 * allocated, then the smallest node name.
 *
 * <p>Where this differs from OVN-Kubernetes' cluster manager ({@code egressservice_cluster.go}):
 * <ul>
 *   <li>Endpoints are required on the host for every service, not only for {@code externalTrafficPolicy: Local}.
 *       OVN-K may pick a node without endpoints; its node then has nothing to SNAT, and the pods' traffic is rerouted
 *       through a node that only forwards it. Host-network endpoints do not make a node eligible here (OVN-K counts
 *       their nodes as long as one endpoint of the service is cluster-networked).</li>
 *   <li>The choice is deterministic (endpoints, load, name) instead of OVN-K's random pick among nodes with no
 *       allocation ({@code PopAny}), so two replicas or two runs agree, and tests can state the answer.</li>
 *   <li>Cordoned nodes are excluded; OVN-K only looks at Ready, reachability and the selector.</li>
 *   <li>The host is kept while it stays a candidate even when a better node appears (no rebalancing).</li>
 * </ul>
 */
public final class HostChooser {
  private static final int MAX_LISTED = 10;
  /** Rejection of a node whose agent the allocator's probes cannot reach (see {@link HostHealth}). */
  static final String AGENT_UNREACHABLE = "unreachable (agent not answering health probes)";

  private HostChooser() {}

  /**
   * @param service the Service with the EgressService's namespace and name, if any
   * @param slices the EndpointSlices labelled {@code kubernetes.io/service-name} = the service, in its namespace,
   *     with only their trusted endpoints ({@link io.egressservice.model.EndpointTrust#trusted})
   * @param nodes every Node
   * @param allocations number of other services currently allocated to each node
   */
  public static Decision choose(
      EgressServiceState es,
      Optional<ServiceInfo> service,
      List<EndpointSliceInfo> slices,
      List<NodeState> nodes,
      Map<String, Integer> allocations) {
    return choose(es, service, slices, nodes, n -> allocations.getOrDefault(n, 0));
  }

  /**
   * The same, with the load of a node asked only when a new host is chosen among several candidates.
   *
   * @param allocations number of other services currently allocated to the named node
   */
  static Decision choose(
      EgressServiceState es,
      Optional<ServiceInfo> service,
      List<EndpointSliceInfo> slices,
      List<NodeState> nodes,
      java.util.function.ToIntFunction<String> allocations) {
    if (es.malformed().isPresent()) {
      return Decision.unallocated(es.ref(), Reason.MALFORMED,
          "the EgressService is malformed (" + es.malformed().get() + "): refused until it is fixed");
    }
    if (es.sourceIpBy() == SourceIpBy.NETWORK) {
      return new Decision(es.ref(), EgressServiceInfo.HOST_ALL, Reason.ALL_NODES,
          "sourceIPBy is Network: every node handles its own endpoints", Optional.empty(), Optional.empty());
    }
    if (service.isEmpty()) {
      return Decision.unallocated(es.ref(), Reason.SERVICE_NOT_FOUND, "Service " + es.ref() + " does not exist");
    }
    ServiceInfo svc = service.get();
    if (!ServiceInfo.LOAD_BALANCER.equals(svc.type())) {
      return Decision.unallocated(es.ref(), Reason.NOT_LOAD_BALANCER,
          "Service " + es.ref() + " is of type " + svc.type() + ", not LoadBalancer");
    }
    if (svc.ingress().stream().noneMatch(i -> !i.ip().isEmpty())) {
      return Decision.unallocated(es.ref(), Reason.NO_INGRESS_IP,
          "Service " + es.ref() + " has no load balancer ingress IP yet");
    }
    Predicate<Map<String, String>> selector;
    try {
      selector = NodeSelectors.compile(es.nodeSelector().orElse(null));
    } catch (NodeSelectors.InvalidSelectorException e) {
      return Decision.unallocated(es.ref(), Reason.INVALID_NODE_SELECTOR, "invalid nodeSelector: " + e.getMessage());
    }

    Map<String, Integer> endpoints = podEndpointsPerNode(slices, nodes);
    Map<String, List<String>> rejected = new LinkedHashMap<>();
    for (String why : List.of("being deleted", "not Ready", AGENT_UNREACHABLE, "cordoned", "not matching nodeSelector",
        "without pod-network endpoints of the service")) {
      rejected.put(why, new ArrayList<>());
    }
    List<NodeState> candidates = new ArrayList<>();
    for (NodeState n : nodes.stream().sorted(Comparator.comparing(NodeState::name)).toList()) {
      String why = n.deleting() ? "being deleted"
          : !n.ready() ? "not Ready"
          : n.agentUnreachable() ? AGENT_UNREACHABLE
          : n.unschedulable() ? "cordoned"
          : !selector.test(n.labels()) ? "not matching nodeSelector"
          : endpoints.getOrDefault(n.name(), 0) == 0 ? "without pod-network endpoints of the service"
          : null;
      if (why == null) {
        candidates.add(n);
      } else {
        rejected.get(why).add(n.name());
      }
    }
    if (candidates.isEmpty()) {
      return Decision.unallocated(es.ref(), Reason.NO_HOST_AVAILABLE, noHostMessage(nodes, endpoints, rejected));
    }
    Optional<NodeState> current = candidates.stream().filter(n -> n.name().equals(es.statusHost())).findFirst();
    NodeState chosen = current.orElseGet(() -> {
      Map<String, Integer> load = new java.util.HashMap<>();
      return candidates.stream()
          .min(Comparator.<NodeState>comparingInt(n -> -endpoints.get(n.name()))
              .thenComparingInt(n -> load.computeIfAbsent(n.name(), allocations::applyAsInt))
              .thenComparing(NodeState::name))
          .orElseThrow();
    });
    String message = (current.isPresent() ? "kept node " : "allocated node ") + chosen.name() + " ("
        + endpoints.get(chosen.name()) + " pod-network endpoint(s), " + candidates.size() + " candidate node(s))";
    String key = LabelNames.hostLabelKey(es.ref());
    Optional<String> labelProblem = LabelNames.keyProblem(key);
    return new Decision(es.ref(), chosen.name(), Reason.HOST_ALLOCATED, message,
        labelProblem.isPresent() ? Optional.empty() : Optional.of(key), labelProblem);
  }

  /** Endpoints with at least one pod-network address, per {@code nodeName}. */
  static Map<String, Integer> podEndpointsPerNode(List<EndpointSliceInfo> slices, List<NodeState> nodes) {
    Set<IpPrefix> nodeAddresses = new HashSet<>();
    Map<IpFamily, List<IpPrefix>> podCidrs = new EnumMap<>(IpFamily.class);
    for (IpFamily f : IpFamily.values()) {
      podCidrs.put(f, new ArrayList<>());
    }
    for (NodeState n : nodes) {
      n.addresses().forEach(a -> IpPrefix.tryParse(a).filter(IpPrefix::isHost).ifPresent(nodeAddresses::add));
      n.podCidrs().forEach(c -> IpPrefix.tryParse(c).ifPresent(p -> podCidrs.get(p.family()).add(p)));
    }
    Map<String, Integer> counts = new TreeMap<>();
    for (EndpointSliceInfo slice : slices) {
      if (!"IPv4".equals(slice.addressType()) && !"IPv6".equals(slice.addressType())) {
        continue; // FQDN slices name no pods
      }
      for (EndpointSliceInfo.Endpoint ep : slice.endpoints()) {
        if (ep.nodeName().isEmpty()) {
          continue;
        }
        boolean podNetwork = ep.addresses().stream()
            .map(IpPrefix::tryParse)
            .flatMap(Optional::stream)
            .filter(IpPrefix::isHost)
            .anyMatch(a -> !nodeAddresses.contains(a)
                && (podCidrs.get(a.family()).isEmpty()
                    || podCidrs.get(a.family()).stream().anyMatch(c -> c.contains(a))));
        if (podNetwork) {
          counts.merge(ep.nodeName().get(), 1, Integer::sum);
        }
      }
    }
    return counts;
  }

  private static String noHostMessage(
      List<NodeState> nodes, Map<String, Integer> endpoints, Map<String, List<String>> rejected) {
    if (nodes.isEmpty()) {
      return "no node can host the service: there are no nodes";
    }
    StringBuilder sb = new StringBuilder("no node can host the service");
    if (endpoints.isEmpty()) {
      sb.append(" (it has no pod-network endpoints on any node)");
    }
    String sep = ": ";
    for (Map.Entry<String, List<String>> e : rejected.entrySet()) {
      List<String> names = e.getValue();
      if (names.isEmpty()) {
        continue;
      }
      sb.append(sep).append(e.getKey()).append(' ')
          .append(String.join(", ", names.subList(0, Math.min(MAX_LISTED, names.size()))));
      if (names.size() > MAX_LISTED) {
        sb.append(" and ").append(names.size() - MAX_LISTED).append(" more");
      }
      sep = "; ";
    }
    return sb.toString();
  }
}

package io.egressservice.allocator;

import io.egressservice.plan.TrustedEndpoints;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.EndpointTrust;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Every EgressService's host and the node label changes that follow, from one snapshot of the cluster. Pure.
 *
 * <p>Services are decided in namespace/name order. The load of a node is the number of other LoadBalancerIP services
 * whose host it is: the current {@code status.host} of the services not yet decided in this pass, the new host of
 * those already decided.
 *
 * <p>Labels: a node carries {@code egress-service.k8s.ovn.org/<namespace>-<name>} exactly when it is that service's
 * host. Labels with the prefix that match no current allocation (deleted services, old hosts, someone else's) are
 * removed, as OVN-Kubernetes does; other labels are never touched.
 */
public final class AllocationPass {
  private AllocationPass() {}

  /**
   * @param decisions one per EgressService, in namespace/name order
   * @param labelChanges node name -> label key -> true to set (value ""), false to remove; nodes without changes
   *     are absent
   */
  public record Result(List<Decision> decisions, Map<String, Map<String, Boolean>> labelChanges) {
    public Result {
      decisions = List.copyOf(decisions);
      labelChanges = Map.copyOf(labelChanges);
    }

    public Optional<Decision> decision(ObjectRef ref) {
      return decisions.stream().filter(d -> d.ref().equals(ref)).findFirst();
    }
  }

  /** A decision without a host also says which slices were not trusted: the usual cause when all of them are. */
  private static Decision withDistrust(Decision d, List<EndpointSliceInfo> slices, Optional<ServiceInfo> service,
      EndpointTrust trust) {
    List<String> problems = slices.stream().map(s -> TrustedEndpoints.sliceProblem(trust, s, service)).flatMap(Optional::stream)
        .sorted().toList();
    if (problems.isEmpty()) {
      return d;
    }
    String listed = String.join("; ", problems.subList(0, Math.min(3, problems.size())))
        + (problems.size() > 3 ? "; and " + (problems.size() - 3) + " more" : "");
    return new Decision(d.ref(), d.host(), d.reason(), d.message() + " (refused: " + listed + ")", d.labelKey(),
        d.labelProblem());
  }

  public static Result compute(
      List<EgressServiceState> egressServices,
      List<ServiceInfo> services,
      List<EndpointSliceInfo> slices,
      List<NodeState> nodes) {
    // Trusting the EndpointSlice controller only.
    return compute(egressServices, services, slices, nodes, EndpointTrust.kubernetesOnly());
  }

  /**
   * @param trust whose slices count: a host is chosen for the endpoints the nodes will act for, so an untrusted
   *     slice cannot draw the service to the node of another namespace's pod
   */
  public static Result compute(
      List<EgressServiceState> egressServices,
      List<ServiceInfo> services,
      List<EndpointSliceInfo> slices,
      List<NodeState> nodes,
      EndpointTrust trust) {
    return compute(egressServices, services, slices, nodes, trust, ServiceRefusals.withoutPolicy(egressServices));
  }

  /** @param refusals what refuses a service whatever its endpoints (the grants, the host labels' holders) */
  static Result compute(
      List<EgressServiceState> egressServices,
      List<ServiceInfo> services,
      List<EndpointSliceInfo> slices,
      List<NodeState> nodes,
      EndpointTrust trust,
      ServiceRefusals refusals) {
    Map<ObjectRef, ServiceInfo> serviceByRef =
        services.stream().collect(Collectors.toMap(ServiceInfo::ref, Function.identity(), (a, b) -> a));
    Map<ObjectRef, List<EndpointSliceInfo>> slicesByService = new HashMap<>();
    for (EndpointSliceInfo s : slices) {
      if (!s.serviceName().isEmpty()) {
        slicesByService.computeIfAbsent(new ObjectRef(s.ref().namespace(), s.serviceName()), k -> new ArrayList<>())
            .add(s);
      }
    }
    Set<String> nodeNames = nodes.stream().map(NodeState::name).collect(Collectors.toSet());
    List<EgressServiceState> ordered = new ArrayList<>(egressServices);
    ordered.sort(Comparator.comparing(EgressServiceState::ref));

    Map<String, Integer> load = new HashMap<>();
    for (EgressServiceState es : ordered) {
      if (es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP && nodeNames.contains(es.statusHost())) {
        load.merge(es.statusHost(), 1, Integer::sum);
      }
    }
    List<Decision> decisions = new ArrayList<>();
    for (EgressServiceState es : ordered) {
      boolean counted = es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP && nodeNames.contains(es.statusHost());
      if (counted) {
        load.merge(es.statusHost(), -1, Integer::sum);
      }
      Optional<ServiceInfo> service = Optional.ofNullable(serviceByRef.get(es.ref()));
      List<EndpointSliceInfo> own = slicesByService.getOrDefault(es.ref(), List.of());
      Decision d = decide(es, service, own, nodes, n -> load.getOrDefault(n, 0), trust, refusals);
      if (d.reason() == Reason.HOST_ALLOCATED) {
        load.merge(d.host(), 1, Integer::sum);
      }
      decisions.add(d);
    }

    Map<String, Set<String>> wanted = new HashMap<>();
    for (Decision d : decisions) {
      d.labelKey().ifPresent(k -> wanted.computeIfAbsent(d.host(), n -> new HashSet<>()).add(k));
    }
    Map<String, Map<String, Boolean>> changes = new TreeMap<>();
    for (NodeState n : nodes) {
      Map<String, Boolean> c = labelChanges(n, wanted.getOrDefault(n.name(), Set.of()));
      if (!c.isEmpty()) {
        changes.put(n.name(), c);
      }
    }
    return new Result(decisions, changes);
  }

  /**
   * One service's decision, given the load of each node as this pass sees it when the service's turn comes
   * (shared with {@link IncrementalAllocation}, so both decide alike).
   */
  static Decision decide(EgressServiceState es, Optional<ServiceInfo> service, List<EndpointSliceInfo> own,
      List<NodeState> nodes, java.util.function.ToIntFunction<String> load, EndpointTrust trust,
      ServiceRefusals refusals) {
    if (es.malformed().isEmpty()) {
      Optional<Decision> refused = refusals.refusal(es, service);
      if (refused.isPresent()) {
        return refused.get();
      }
    }
    Decision d = HostChooser.choose(es, service, TrustedEndpoints.trusted(trust, own, service), nodes, load);
    if (d.reason() == Reason.NO_HOST_AVAILABLE) {
      d = withDistrust(d, own, service, trust);
    }
    return d;
  }

  /** The label changes that make node {@code n} carry exactly the host labels {@code want} (key -> set). */
  static Map<String, Boolean> labelChanges(NodeState n, Set<String> want) {
    Map<String, Boolean> c = new TreeMap<>();
    for (String key : want) {
      if (!"".equals(n.labels().get(key))) {
        c.put(key, true);
      }
    }
    for (String key : n.labels().keySet()) {
      if (LabelNames.isHostLabel(key) && !want.contains(key)) {
        c.put(key, false);
      }
    }
    return c;
  }
}

package io.egressservice.allocator;

import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.EndpointTrust;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * {@link AllocationPass} kept current change by change: the same decisions and label changes, re-deciding only the
 * services a change can affect. Pure; one thread at a time.
 *
 * <p>What a decision reads, and so what re-decides it:
 * <ul>
 *   <li>its own inputs ({@link ServiceInputs}): re-decided when they change;</li>
 *   <li>the Ready, cordon, deletion, label and reachability state of the nodes where it has endpoints: only those
 *       can be candidates; a change of such a node re-decides the services with an endpoint there, the ones
 *       hosted there, and those without a host (their message names every node); a change of labels alone only
 *       those of them with a nodeSelector;</li>
 *   <li>every node's addresses and pod CIDRs (which endpoints are pod-network) and the set of node names: a change
 *       of those re-decides everything (node additions and removals, rare);</li>
 *   <li>the load of the nodes, but only when a new host is chosen (a kept host does not look at it): such a
 *       decision is re-made on every evaluation until the service's status names its host, as the full pass
 *       would re-make it on every pass.</li>
 * </ul>
 * The load a service sees is the full pass's: the services before it (namespace/name order) count with their
 * decision, the ones after it with their current {@code status.host}.
 */
final class IncrementalAllocation {
  /**
   * What one evaluation decided.
   *
   * @param evaluated the decisions made again, in namespace/name order
   * @param removed services whose EgressService is gone since the last evaluation
   * @param labelChanges as {@link AllocationPass.Result#labelChanges()}, for the nodes whose labels or wanted
   *     labels may have changed (a full evaluation: every node)
   * @param hostsChanged whether the set of nodes hosting a service changed
   */
  record Step(List<Decision> evaluated, List<ObjectRef> removed, Map<String, Map<String, Boolean>> labelChanges,
      boolean hostsChanged) {
    Step {
      evaluated = List.copyOf(evaluated);
      removed = List.copyOf(removed);
      labelChanges = Map.copyOf(labelChanges);
    }
  }

  private final EndpointTrust trust;
  private final TreeMap<ObjectRef, ServiceInputs> inputs = new TreeMap<>();
  private final Map<ObjectRef, Decision> decisions = new HashMap<>();
  private ServiceRefusals refusals = ServiceRefusals.withoutPolicy(List.of());
  private Map<String, NodeState> nodes = Map.of();
  private List<NodeState> nodeList = List.of();

  /** Node name -> services with an endpoint naming it (trusted or not). */
  private final Map<String, Set<ObjectRef>> endpointsOn = new HashMap<>();
  /** Node name -> services decided HOST_ALLOCATED there. */
  private final Map<String, TreeSet<ObjectRef>> allocatedOn = new HashMap<>();
  /** Node name -> LoadBalancerIP services whose status.host names it (the load of the not yet decided). */
  private final Map<String, TreeSet<ObjectRef>> statusOn = new HashMap<>();
  private final Set<ObjectRef> withoutHost = new HashSet<>();
  /** Services whose decision chose a new host, so depends on the load. */
  private final Set<ObjectRef> loadDependent = new HashSet<>();

  private final Set<ObjectRef> touched = new HashSet<>();
  private final Set<ObjectRef> removed = new TreeSet<>();
  private final Set<String> dirtyNodes = new TreeSet<>();
  private Set<String> hostedBefore = Set.of();

  IncrementalAllocation(EndpointTrust trust) {
    this.trust = trust;
  }

  /**
   * Sets one service's inputs; it is re-decided at the next evaluation if they differ from what it had, or if its
   * status did not show its decision yet (the status may have changed and changed back meanwhile: the write is
   * checked again, as the full pass would).
   */
  void put(ServiceInputs in) {
    ObjectRef ref = in.ref();
    ServiceInputs before = inputs.put(ref, in);
    removed.remove(ref);
    if (in.equals(before)) {
      if (statusBehind(in, decisions.get(ref))) {
        touched.add(ref);
      }
      return;
    }
    if (before != null) {
      unindex(before);
    }
    index(in);
    touched.add(ref);
    // Of the services that share a host label, the oldest holds it: the others are decided again.
    touched.addAll(refusals.put(in.egressService()));
  }

  /** The EgressService is gone. */
  void remove(ObjectRef ref) {
    ServiceInputs before = inputs.remove(ref);
    if (before == null) {
      return;
    }
    unindex(before);
    Decision d = decisions.remove(ref);
    if (d != null) {
      forget(ref, d);
      dirtyNodes.add(d.host());
    }
    touched.remove(ref);
    removed.add(ref);
    touched.addAll(refusals.remove(ref));
  }

  /** Replaces the nodes; re-decides what the changed ones can affect. */
  void nodes(List<NodeState> next) {
    Map<String, NodeState> byName = new HashMap<>();
    for (NodeState n : next) {
      byName.putIfAbsent(n.name(), n);
    }
    boolean all = !byName.keySet().equals(nodes.keySet());
    for (NodeState n : byName.values()) {
      NodeState old = nodes.get(n.name());
      if (n.equals(old)) {
        continue;
      }
      dirtyNodes.add(n.name());
      if (old == null || !old.addresses().equals(n.addresses()) || !old.podCidrs().equals(n.podCidrs())) {
        all = true;
      } else {
        // Labels alone (the allocator's own host labels, mostly) matter only to services with a nodeSelector.
        boolean labelsOnly = old.ready() == n.ready() && old.unschedulable() == n.unschedulable()
            && old.deleting() == n.deleting() && old.agentUnreachable() == n.agentUnreachable();
        List<ObjectRef> affected = new ArrayList<>(endpointsOn.getOrDefault(n.name(), Set.of()));
        affected.addAll(allocatedOn.getOrDefault(n.name(), new TreeSet<>()));
        affected.addAll(withoutHost);
        for (ObjectRef ref : affected) {
          if (!labelsOnly || inputs.get(ref).egressService().nodeSelector().isPresent()) {
            touched.add(ref);
          }
        }
      }
    }
    if (all) {
      touched.addAll(inputs.keySet());
      dirtyNodes.addAll(byName.keySet());
    }
    nodes = byName;
    nodeList = List.copyOf(byName.values());
  }

  /** Re-decides the touched services (and those whose decision depends on the load), in namespace/name order. */
  Step evaluate() {
    TreeSet<ObjectRef> due = new TreeSet<>(touched);
    due.addAll(loadDependent);
    touched.clear();
    List<Decision> out = new ArrayList<>(due.size());
    for (ObjectRef ref : due) {
      ServiceInputs in = inputs.get(ref);
      Decision d = AllocationPass.decide(in.egressService(), in.service(), in.slices(), nodeList,
          node -> load(ref, node), trust, refusals);
      record(in, d);
      out.add(d);
    }
    Map<String, Map<String, Boolean>> labels = new TreeMap<>();
    for (String name : dirtyNodes) {
      NodeState n = nodes.get(name);
      if (n != null) {
        Map<String, Boolean> c = AllocationPass.labelChanges(n, wantedOn(name));
        if (!c.isEmpty()) {
          labels.put(name, c);
        }
      }
    }
    // A node stays due until its labels show the patch: a change that undoes the patch before this sees it
    // (someone puts a removed label back) is then still caught, as the full pass would catch it.
    dirtyNodes.clear();
    dirtyNodes.addAll(labels.keySet());
    Set<String> hosted = hostedNodes();
    Step step = new Step(out, List.copyOf(removed), labels, !hosted.equals(hostedBefore));
    hostedBefore = hosted;
    removed.clear();
    return step;
  }

  /**
   * Forgets everything and decides these services on these nodes with {@link AllocationPass#compute} (the resync,
   * and the start of a leadership term): every service is evaluated, every node's labels checked.
   */
  Step full(Collection<ServiceInputs> all, List<NodeState> nodeStates) {
    return full(all, nodeStates, io.egressservice.plan.GrantPolicy.off(), Map.of());
  }

  /**
   * The same under {@code policy} with these Namespaces: they are read only here, so a change of either needs a
   * full evaluation.
   */
  Step full(Collection<ServiceInputs> all, List<NodeState> nodeStates, io.egressservice.plan.GrantPolicy policy,
      Map<String, io.egressservice.plan.NamespaceInfo> namespaces) {
    Set<ObjectRef> gone = new TreeSet<>(inputs.keySet());
    gone.addAll(removed);
    inputs.clear();
    decisions.clear();
    endpointsOn.clear();
    allocatedOn.clear();
    statusOn.clear();
    withoutHost.clear();
    loadDependent.clear();
    touched.clear();
    removed.clear();
    dirtyNodes.clear();
    List<EgressServiceState> states = new ArrayList<>(all.size());
    List<ServiceInfo> services = new ArrayList<>(all.size());
    List<EndpointSliceInfo> slices = new ArrayList<>();
    for (ServiceInputs in : all) {
      if (inputs.putIfAbsent(in.ref(), in) == null) {
        index(in);
        states.add(in.egressService());
        in.service().ifPresent(services::add);
        slices.addAll(in.slices());
      }
    }
    gone.removeAll(inputs.keySet());
    refusals = new ServiceRefusals(policy, namespaces, states);
    nodes(nodeStates);
    dirtyNodes.clear();
    touched.clear();
    AllocationPass.Result result = AllocationPass.compute(states, services, slices, nodeList, trust, refusals);
    for (Decision d : result.decisions()) {
      record(inputs.get(d.ref()), d);
    }
    hostedBefore = hostedNodes();
    dirtyNodes.addAll(result.labelChanges().keySet());
    return new Step(result.decisions(), List.copyOf(gone), result.labelChanges(), true);
  }

  /** Every current decision, in namespace/name order. */
  List<Decision> decisions() {
    return inputs.keySet().stream().map(decisions::get).filter(java.util.Objects::nonNull).toList();
  }

  Optional<ServiceInputs> inputs(ObjectRef ref) {
    return Optional.ofNullable(inputs.get(ref));
  }

  /** The nodes as last given, by name. */
  Map<String, NodeState> nodesByName() {
    return nodes;
  }

  /** The nodes that host at least one LoadBalancerIP service. */
  Set<String> hostedNodes() {
    Set<String> out = new TreeSet<>();
    allocatedOn.forEach((n, refs) -> {
      if (!refs.isEmpty()) {
        out.add(n);
      }
    });
    return out;
  }

  private static boolean statusBehind(ServiceInputs in, Decision d) {
    EgressServiceState es = in.egressService();
    return d != null && d.reason() != Reason.MALFORMED && (!es.hasStatus() || !d.host().equals(es.statusHost()));
  }

  private int load(ObjectRef ref, String node) {
    TreeSet<ObjectRef> before = allocatedOn.get(node);
    TreeSet<ObjectRef> after = statusOn.get(node);
    return (before == null ? 0 : before.headSet(ref, false).size())
        + (after == null ? 0 : after.tailSet(ref, false).size());
  }

  private Set<String> wantedOn(String node) {
    Set<String> want = new HashSet<>();
    for (ObjectRef ref : allocatedOn.getOrDefault(node, new TreeSet<>())) {
      decisions.get(ref).labelKey().ifPresent(want::add);
    }
    return want;
  }

  private void record(ServiceInputs in, Decision d) {
    ObjectRef ref = in.ref();
    Decision old = decisions.put(ref, d);
    if (old != null) {
      forget(ref, old);
    }
    if (old == null || !old.host().equals(d.host()) || !old.labelKey().equals(d.labelKey())) {
      dirtyNodes.add(d.host());
      if (old != null) {
        dirtyNodes.add(old.host());
      }
    }
    if (d.reason() == Reason.HOST_ALLOCATED) {
      allocatedOn.computeIfAbsent(d.host(), n -> new TreeSet<>()).add(ref);
      if (!d.host().equals(in.egressService().statusHost())) {
        loadDependent.add(ref);
      }
    } else if (d.reason() == Reason.NO_HOST_AVAILABLE) {
      withoutHost.add(ref);
    }
  }

  /** Takes decision {@code d} of {@code ref} out of the indexes. */
  private void forget(ObjectRef ref, Decision d) {
    withoutHost.remove(ref);
    loadDependent.remove(ref);
    if (d.reason() == Reason.HOST_ALLOCATED) {
      TreeSet<ObjectRef> on = allocatedOn.get(d.host());
      if (on != null && on.remove(ref) && on.isEmpty()) {
        allocatedOn.remove(d.host());
      }
    }
  }

  private void index(ServiceInputs in) {
    ObjectRef ref = in.ref();
    EgressServiceState es = in.egressService();
    if (es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP && !es.statusHost().isEmpty()) {
      statusOn.computeIfAbsent(es.statusHost(), n -> new TreeSet<>()).add(ref);
    }
    for (String node : endpointNodes(in)) {
      endpointsOn.computeIfAbsent(node, n -> new HashSet<>()).add(ref);
    }
  }

  private void unindex(ServiceInputs in) {
    ObjectRef ref = in.ref();
    EgressServiceState es = in.egressService();
    TreeSet<ObjectRef> on = statusOn.get(es.statusHost());
    if (on != null && on.remove(ref) && on.isEmpty()) {
      statusOn.remove(es.statusHost());
    }
    for (String node : endpointNodes(in)) {
      Set<ObjectRef> refs = endpointsOn.get(node);
      if (refs != null && refs.remove(ref) && refs.isEmpty()) {
        endpointsOn.remove(node);
      }
    }
  }

  private static Set<String> endpointNodes(ServiceInputs in) {
    Set<String> out = new HashSet<>();
    for (EndpointSliceInfo s : in.slices()) {
      for (EndpointSliceInfo.Endpoint e : s.endpoints()) {
        e.nodeName().ifPresent(out::add);
      }
    }
    return out;
  }
}

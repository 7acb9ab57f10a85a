package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The {@link IncrementalPlanner}'s inputs, fed one object at a time as they change, and what each change touches:
 * the EgressServices to re-plan ({@link #drainDirty}), or everything ({@link #fullNeeded}). While a plan's
 * {@link PlanContext} is in use, its Services and slices are kept in step with these inputs, so re-planning a
 * service reads what the full plan would.
 *
 * <p>What a change touches: an EgressService itself; a Service the EgressService of the same namespace/name, and
 * every EgressService whose Service shares one of its LoadBalancer IPs (old or new: which namespace keeps an LB IP
 * is decided across services); an EndpointSlice the service of its {@code kubernetes.io/service-name} label (old
 * and new). A Node plans everything again.
 */
final class PlannerInputs {
  private final String nodeName;
  private final PlanConfig config;
  private final Map<ObjectRef, EgressServiceInfo> egressServices = new HashMap<>();
  private final Map<ObjectRef, ServiceInfo> services = new HashMap<>();
  private final Map<ObjectRef, EndpointSliceInfo> slices = new HashMap<>();
  private final Map<ObjectRef, TreeMap<ObjectRef, EndpointSliceInfo>> slicesByService = new HashMap<>();
  private final LinkedHashMap<String, NodeInfo> nodes = new LinkedHashMap<>();
  private final Map<String, Integer> networks = new HashMap<>();
  private GrantPolicy grantPolicy = GrantPolicy.off();
  private final Map<String, NamespaceInfo> namespaces = new HashMap<>();

  // What changed since the last plan.
  private final Set<ObjectRef> dirty = new HashSet<>();
  private boolean fullNeeded = true;
  /** The context of the last full plan, kept in step; null before the first plan. */
  private PlanContext context;

  PlannerInputs(String nodeName, PlanConfig config) {
    this.nodeName = nodeName;
    this.config = config;
  }

  void putEgressService(EgressServiceInfo es) {
    EgressServiceInfo old = egressServices.put(es.ref(), es);
    if (es.equals(old)) {
      return;
    }
    if (old != null) {
      countNetwork(old.network(), -1);
    }
    countNetwork(es.network(), 1);
    dirty.add(es.ref());
    if (context != null) {
      // The oldest of the services that share a host label holds it: the others' verdicts may change.
      dirty.addAll(context.putEgressService(es));
    }
  }

  void removeEgressService(ObjectRef ref) {
    EgressServiceInfo old = egressServices.remove(ref);
    if (old != null) {
      countNetwork(old.network(), -1);
      dirty.add(ref);
      if (context != null) {
        dirty.addAll(context.removeEgressService(ref));
      }
    }
  }

  /** A Namespace's labels decide which grants select it: its EgressServices are re-planned when the policy is on. */
  void putNamespace(NamespaceInfo ns) {
    NamespaceInfo old = namespaces.put(ns.name(), ns);
    if (!ns.equals(old)) {
      namespaceChanged(ns.name());
      if (context != null) {
        context.putNamespace(ns);
      }
    }
  }

  void removeNamespace(String name) {
    if (namespaces.remove(name) != null) {
      namespaceChanged(name);
      if (context != null) {
        context.removeNamespace(name);
      }
    }
  }

  private void namespaceChanged(String name) {
    if (!grantPolicy.enforced()) {
      return;
    }
    for (ObjectRef ref : egressServices.keySet()) {
      if (ref.namespace().equals(name)) {
        dirty.add(ref);
      }
    }
  }

  /** The policy is read by every service: a change plans everything. */
  void setGrantPolicy(GrantPolicy policy) {
    if (!policy.equals(grantPolicy)) {
      grantPolicy = policy;
      fullNeeded = true;
    }
  }

  private void countNetwork(String network, int delta) {
    if (!network.isEmpty()) {
      networks.merge(network, delta, (a, b) -> a + b == 0 ? null : a + b);
    }
  }

  void putService(ServiceInfo s) {
    ServiceInfo old = services.put(s.ref(), s);
    if (s.equals(old)) {
      return;
    }
    serviceChanged(s.ref(), old, s);
  }

  void removeService(ObjectRef ref) {
    ServiceInfo old = services.remove(ref);
    if (old != null) {
      serviceChanged(ref, old, null);
    }
  }

  private void serviceChanged(ObjectRef ref, ServiceInfo old, ServiceInfo now) {
    dirty.add(ref);
    if (context == null) {
      return;
    }
    // Which namespace keeps an LB IP is decided across Services: everyone holding an IP it had or has is re-planned.
    Set<IpPrefix> ips = new HashSet<>();
    if (old != null) {
      ips.addAll(LoadBalancerIps.heldBy(old));
    }
    if (now != null) {
      ips.addAll(LoadBalancerIps.heldBy(now));
    }
    ips.forEach(ip -> context.lbIpHolders(ip).forEach(h -> dirty.add(h.ref())));
    if (now == null) {
      context.removeService(ref);
    } else {
      context.putService(now);
    }
    ips.forEach(ip -> context.lbIpHolders(ip).forEach(h -> dirty.add(h.ref())));
  }

  void putSlice(EndpointSliceInfo slice) {
    EndpointSliceInfo old = slices.put(slice.ref(), slice);
    if (slice.equals(old)) {
      return;
    }
    if (old != null) {
      detach(old);
    }
    attach(slice);
  }

  void removeSlice(ObjectRef ref) {
    EndpointSliceInfo old = slices.remove(ref);
    if (old != null) {
      detach(old);
    }
  }

  private static ObjectRef serviceOf(EndpointSliceInfo slice) {
    return new ObjectRef(slice.ref().namespace(), slice.serviceName());
  }

  private void attach(EndpointSliceInfo slice) {
    if (slice.serviceName().isEmpty()) {
      return;
    }
    ObjectRef service = serviceOf(slice);
    TreeMap<ObjectRef, EndpointSliceInfo> mine = slicesByService.computeIfAbsent(service, k -> new TreeMap<>());
    mine.put(slice.ref(), slice);
    slicesChanged(service, mine);
  }

  private void detach(EndpointSliceInfo slice) {
    if (slice.serviceName().isEmpty()) {
      return;
    }
    ObjectRef service = serviceOf(slice);
    TreeMap<ObjectRef, EndpointSliceInfo> mine = slicesByService.get(service);
    if (mine == null) {
      return;
    }
    mine.remove(slice.ref());
    if (mine.isEmpty()) {
      slicesByService.remove(service);
    }
    slicesChanged(service, mine);
  }

  private void slicesChanged(ObjectRef service, TreeMap<ObjectRef, EndpointSliceInfo> mine) {
    dirty.add(service);
    if (context != null) {
      context.setSlices(service, List.copyOf(mine.values()));
    }
  }

  /** Nodes are read by every service (addresses, pod CIDRs, steering hosts): a change plans everything. */
  void putNode(NodeInfo node) {
    NodeInfo old = nodes.put(node.name(), node);
    if (!node.equals(old)) {
      fullNeeded = true;
    }
  }

  void removeNode(String name) {
    if (nodes.remove(name) != null) {
      fullNeeded = true;
    }
  }

  /** The {@code spec.network} values of the EgressServices: what the node's facts must resolve. */
  Set<String> networks() {
    return Set.copyOf(networks.keySet());
  }

  /** The full plan's inputs (every object). */
  NodeInputs all(NodeObservations node) {
    return new NodeInputs(nodeName, List.copyOf(egressServices.values()), List.copyOf(services.values()),
        List.copyOf(slices.values()), List.copyOf(nodes.values()), node.localAddresses(), node.networks(), config,
        node.existingMarks(), node.existingSteerTables(), grantPolicy, List.copyOf(namespaces.values()));
  }

  /** The EgressService of {@code ref}, or null when there is none (it was removed). */
  EgressServiceInfo egressService(ObjectRef ref) {
    return egressServices.get(ref);
  }

  /** Whether a change since the last plan needs every service planned again. */
  boolean fullNeeded() {
    return fullNeeded;
  }

  boolean nothingChanged() {
    return dirty.isEmpty();
  }

  /** The EgressServices a change touched since the last call (or the last full plan); forgotten here. */
  List<ObjectRef> drainDirty() {
    List<ObjectRef> changed = new ArrayList<>(dirty);
    dirty.clear();
    return changed;
  }

  /** A full plan was made with {@code planned}: changes from now on are kept in step with it. */
  void fullyPlanned(PlanContext planned) {
    context = planned;
    dirty.clear();
    fullNeeded = false;
  }
}

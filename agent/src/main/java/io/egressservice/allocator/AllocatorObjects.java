package io.egressservice.allocator;

import io.egressservice.informers.ClusterInformers;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.ovn.k8s.v1.EgressService;

/**
 * The allocator's view of the informer caches: one EgressService's objects found by key (never by listing a
 * store), each converted once per object. The caches replace an object when it changes and never mutate it, so an
 * object seen before (by identity) keeps its conversion, as {@code PlanInputs.Memo} does for the node agent.
 *
 * <p>The slices of a Service come from the informers' own index by their {@code kubernetes.io/service-name} label
 * ({@link ClusterInformers#endpointSlicesOf}). Everything here is for the allocator's worker thread.
 */
final class AllocatorObjects {
  /** One EgressService's objects as last read, and what they converted to. */
  private record Read(EgressService egressService, Service service, List<EndpointSlice> sliceObjects,
      ServiceInputs inputs) {}

  private final ClusterInformers informers;
  private final Map<ObjectRef, Read> reads = new HashMap<>();
  private IdentityHashMap<Node, NodeState> nodeMemo = new IdentityHashMap<>();
  private List<Node> nodeObjects = List.of();

  AllocatorObjects(ClusterInformers informers) {
    this.informers = informers;
  }

  /** The Service a slice is labelled for, or empty. */
  static Optional<ObjectRef> serviceOf(EndpointSlice slice) {
    String name = PlanInputs.serviceName(slice);
    return name.isEmpty() ? Optional.empty() : Optional.of(new ObjectRef(slice.getMetadata().getNamespace(), name));
  }

  /** Whether an EgressService of this namespace and name is cached. O(1). */
  boolean optedIn(ObjectRef ref) {
    return informers.hasEgressService(ref.namespace(), ref.name());
  }

  /** The current inputs of one EgressService, or empty when it is gone. */
  Optional<ServiceInputs> read(ObjectRef ref) {
    EgressService es = informers.egressServices().getStore().getByKey(key(ref));
    if (es == null) {
      reads.remove(ref);
      return Optional.empty();
    }
    Read before = reads.get(ref);
    Service svc = informers.services().getStore().getByKey(key(ref));
    // In store-key order, as the full pass lists them: equal inputs give equal decisions.
    List<EndpointSlice> slices = new ArrayList<>(informers.endpointSlicesOf(ref.namespace(), ref.name()));
    slices.sort(java.util.Comparator.comparing((EndpointSlice s) -> key(s)));
    if (before != null && before.egressService() == es && before.service() == svc
        && sameObjects(before.sliceObjects(), slices)) {
      return Optional.of(before.inputs());
    }
    EgressServiceState state = before != null && before.egressService() == es
        ? before.inputs().egressService() : AllocatorInputs.egressService(es);
    Optional<ServiceInfo> service = before != null && before.service() == svc && svc != null
        ? before.inputs().service() : Optional.ofNullable(svc).map(PlanInputs::service);
    List<EndpointSliceInfo> infos = new ArrayList<>(slices.size());
    for (EndpointSlice s : slices) {
      int known = before == null ? -1 : indexOfIdentical(before.sliceObjects(), s);
      infos.add(known >= 0 ? before.inputs().slices().get(known) : PlanInputs.slice(s));
    }
    ServiceInputs inputs = new ServiceInputs(state, service, infos);
    reads.put(ref, new Read(es, svc, List.copyOf(slices), inputs));
    return Optional.of(inputs);
  }

  /** Every cached EgressService's inputs (the full pass). */
  List<ServiceInputs> readAll() {
    List<ServiceInputs> out = new ArrayList<>();
    Set<ObjectRef> present = new java.util.HashSet<>();
    for (EgressService es : informers.egressServices().getStore().list()) {
      ObjectRef ref = PlanInputs.ref(es);
      if (present.add(ref)) {
        read(ref).ifPresent(out::add);
      }
    }
    reads.keySet().retainAll(present);
    return out;
  }

  /** The EgressService object the last {@link #read} of {@code ref} converted. */
  Optional<EgressService> egressService(ObjectRef ref) {
    return Optional.ofNullable(reads.get(ref)).map(Read::egressService);
  }

  /** Every cached Node as the allocator sees it, the probes' verdict included; lists the (small) Node store. */
  List<NodeState> nodes(Set<String> unreachable) {
    List<Node> objects = informers.nodes().getStore().list();
    IdentityHashMap<Node, NodeState> next = new IdentityHashMap<>(objects.size() * 2);
    List<NodeState> out = new ArrayList<>(objects.size());
    for (Node n : objects) {
      NodeState known = nodeMemo.get(n);
      NodeState state = known != null ? known : AllocatorInputs.node(n);
      next.put(n, state);
      out.add(state.withAgentUnreachable(unreachable.contains(state.name())));
    }
    nodeMemo = next;
    nodeObjects = List.copyOf(objects);
    return out;
  }

  /** The Node objects the last {@link #nodes} call read. */
  List<Node> nodeObjects() {
    return nodeObjects;
  }

  private static boolean sameObjects(List<EndpointSlice> a, List<EndpointSlice> b) {
    if (a.size() != b.size()) {
      return false;
    }
    for (int i = 0; i < a.size(); i++) {
      if (a.get(i) != b.get(i)) {
        return false;
      }
    }
    return true;
  }

  private static int indexOfIdentical(List<EndpointSlice> list, EndpointSlice s) {
    for (int i = 0; i < list.size(); i++) {
      if (list.get(i) == s) {
        return i;
      }
    }
    return -1;
  }

  private static String key(ObjectRef ref) {
    return ref.namespace() + "/" + ref.name();
  }

  private static String key(EndpointSlice s) {
    return s.getMetadata().getNamespace() + "/" + s.getMetadata().getName();
  }
}

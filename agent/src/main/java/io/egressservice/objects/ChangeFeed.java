package io.egressservice.objects;

import io.egressservice.plan.IncrementalPlanner;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.NodeInputs;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.ovn.k8s.v1.EgressService;

/**
 * The objects that changed since the last reconcile, as informer event handlers see them (the latest state of
 * each, or its deletion), handed to an {@link IncrementalPlanner} one at a time: a reconcile converts only these
 * to plan inputs ({@link PlanInputs}), and the planner re-plans only the services they touch. Handlers may
 * record from any thread; one thread drains.
 */
public final class ChangeFeed {
  private final Object lock = new Object();
  private Map<ObjectRef, Optional<EgressService>> egressServices = new LinkedHashMap<>();
  private Map<ObjectRef, Optional<Service>> services = new LinkedHashMap<>();
  private Map<ObjectRef, Optional<EndpointSlice>> slices = new LinkedHashMap<>();
  private Map<String, Optional<Node>> nodes = new LinkedHashMap<>();
  private Map<String, Optional<io.egressservice.plan.NamespaceInfo>> namespaces = new LinkedHashMap<>();
  private Optional<io.egressservice.plan.GrantPolicy> policy = Optional.empty();
  /** The EgressServices whose spec could not be read (drain thread only). */
  private final Set<ObjectRef> malformed = new HashSet<>();

  public void egressService(EgressService es, boolean deleted) {
    synchronized (lock) {
      egressServices.put(PlanInputs.ref(es), deleted ? Optional.empty() : Optional.of(es));
    }
  }

  public void service(Service s, boolean deleted) {
    synchronized (lock) {
      services.put(PlanInputs.ref(s), deleted ? Optional.empty() : Optional.of(s));
    }
  }

  public void slice(EndpointSlice s, boolean deleted) {
    synchronized (lock) {
      slices.put(PlanInputs.ref(s), deleted ? Optional.empty() : Optional.of(s));
    }
  }

  public void node(Node n, boolean deleted) {
    synchronized (lock) {
      nodes.put(n.getMetadata().getName(), deleted ? Optional.empty() : Optional.of(n));
    }
  }

  /** A Namespace's labels changed (the grants select by them), or it is gone. */
  public void namespace(io.egressservice.plan.NamespaceInfo ns, boolean deleted) {
    synchronized (lock) {
      namespaces.put(ns.name(), deleted ? Optional.empty() : Optional.of(ns));
    }
  }

  /** The policy as now read and enforced. */
  public void policy(io.egressservice.plan.GrantPolicy p) {
    synchronized (lock) {
      policy = Optional.of(p);
    }
  }

  /** Forgets what was recorded (a reload from the caches follows). */
  public void clear() {
    synchronized (lock) {
      namespaces = new LinkedHashMap<>();
      policy = Optional.empty();
      egressServices = new LinkedHashMap<>();
      services = new LinkedHashMap<>();
      slices = new LinkedHashMap<>();
      nodes = new LinkedHashMap<>();
    }
  }

  /** Converts what changed since the last drain and hands it to {@code planner}; returns how many objects. */
  public int drainInto(IncrementalPlanner planner) {
    Map<ObjectRef, Optional<EgressService>> es;
    Map<ObjectRef, Optional<Service>> svc;
    Map<ObjectRef, Optional<EndpointSlice>> sl;
    Map<String, Optional<Node>> no;
    Map<String, Optional<io.egressservice.plan.NamespaceInfo>> nss;
    Optional<io.egressservice.plan.GrantPolicy> grantPolicy;
    synchronized (lock) {
      if (egressServices.isEmpty() && services.isEmpty() && slices.isEmpty() && nodes.isEmpty()
          && namespaces.isEmpty() && policy.isEmpty()) {
        return 0;
      }
      nss = namespaces;
      grantPolicy = policy;
      namespaces = new LinkedHashMap<>();
      policy = Optional.empty();
      es = egressServices;
      svc = services;
      sl = slices;
      no = nodes;
      egressServices = new LinkedHashMap<>();
      services = new LinkedHashMap<>();
      slices = new LinkedHashMap<>();
      nodes = new LinkedHashMap<>();
    }
    es.forEach((ref, o) -> {
      malformed.remove(ref);
      if (o.isEmpty()) {
        planner.removeEgressService(ref);
        return;
      }
      if (o.get() instanceof MalformedEgressService) {
        malformed.add(ref);
      }
      planner.putEgressService(PlanInputs.egressService(o.get()));
    });
    svc.forEach((ref, o) -> o.ifPresentOrElse(s -> planner.putService(PlanInputs.service(s)),
        () -> planner.removeService(ref)));
    sl.forEach((ref, o) -> o.ifPresentOrElse(s -> planner.putSlice(PlanInputs.slice(s)),
        () -> planner.removeSlice(ref)));
    no.forEach((name, o) -> o.ifPresentOrElse(n -> planner.putNode(PlanInputs.node(n)),
        () -> planner.removeNode(name)));
    nss.forEach((name, o) -> o.ifPresentOrElse(planner::putNamespace, () -> planner.removeNamespace(name)));
    grantPolicy.ifPresent(planner::setGrantPolicy);
    return es.size() + svc.size() + sl.size() + no.size() + nss.size() + (grantPolicy.isPresent() ? 1 : 0);
  }

  /**
   * A planner holding every object of {@code objects} (a cache snapshot), converted through {@code memo} (which
   * reuses what it converted before). Call {@link #clear} before taking the snapshot: what is recorded after it is
   * drained by the next reconcile (a change the snapshot already holds is then a no-op).
   */
  public IncrementalPlanner load(ClusterObjects objects, String nodeName, PlanConfig config, PlanInputs.Memo memo) {
    NodeInputs in = PlanInputs.of(nodeName, objects, List.of(), NetworkResolution.offlineResolution(), config,
        Map.of(), memo);
    IncrementalPlanner planner = new IncrementalPlanner(nodeName, config);
    in.egressServices().forEach(planner::putEgressService);
    in.services().forEach(planner::putService);
    in.endpointSlices().forEach(planner::putSlice);
    in.nodes().forEach(planner::putNode);
    planner.setGrantPolicy(in.grantPolicy());
    in.namespaces().forEach(planner::putNamespace);
    malformed.clear();
    objects.egressServices().stream().filter(MalformedEgressService.class::isInstance)
        .forEach(e -> malformed.add(PlanInputs.ref(e)));
    return planner;
  }

  /** How many EgressServices drained or loaded so far are malformed now. */
  public int malformedEgressServices() {
    return malformed.size();
  }
}

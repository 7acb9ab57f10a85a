package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The node's plan kept up to date as its inputs change, re-planning only the EgressServices whose inputs
 * changed (and those a change couples them to), through the same per-service code as {@link Planner}. Pure: the
 * caller feeds it the cluster's objects as plan inputs, one at a time as they change, and what the node shows
 * ({@link NodeObservations}); {@link #plan} gives what {@link Planner#plan} would give for the same inputs, with
 * the lists in another order.
 *
 * <p>What a change touches: an EgressService itself; a Service the EgressService of the same namespace/name, and
 * every EgressService whose Service shares one of its LoadBalancer IPs (old or new: which namespace keeps an LB IP
 * is decided across services); an EndpointSlice the service of its {@code kubernetes.io/service-name} label (old
 * and new). A re-planned service whose endpoint addresses (old or new) another service also names re-plans that one
 * too (the older one owns a shared endpoint). A Node, what the node shows, a change of the networks' marks (mark
 * mode), or a steering host that gets or loses a table, plans everything again.
 *
 * <p>One instance serves one thread at a time.
 */
public final class IncrementalPlanner {
  private final String nodeName;
  private final PlanConfig config;

  // The inputs.
  private final Map<ObjectRef, EgressServiceInfo> egressServices = new HashMap<>();
  private final Map<ObjectRef, ServiceInfo> services = new HashMap<>();
  private final Map<ObjectRef, EndpointSliceInfo> slices = new HashMap<>();
  private final Map<ObjectRef, TreeMap<ObjectRef, EndpointSliceInfo>> slicesByService = new HashMap<>();
  private final LinkedHashMap<String, NodeInfo> nodes = new LinkedHashMap<>();
  private final Map<String, Integer> networks = new HashMap<>();

  // What changed since the last plan.
  private final Set<ObjectRef> dirty = new HashSet<>();
  private boolean fullNeeded = true;

  // The last plan: each service's part, and the node-wide parts with the summaries they are derived from.
  private PlanContext context;
  private NodeObservations observations;
  private DesiredState last;
  private Map<Long, Long> networkMarks = Map.of();
  private final Map<ObjectRef, ServicePlan> plans = new HashMap<>();
  private final Map<ObjectRef, Integer> slotOf = new HashMap<>();
  private final PlanSlots slots = new PlanSlots();
  /** Per endpoint address, the services that try to own it, oldest first. */
  private final Map<IpPrefix, List<ServiceOrder>> claimants = new HashMap<>();
  /** Mark mode: how many mark entries each source has, the services' tables, and each network's rule by age. */
  private final Map<IpPrefix, Integer> markedSources = new HashMap<>();
  private final Map<Long, Integer> markTables = new HashMap<>();
  private final Map<String, TreeMap<ServiceOrder, RuleSpec>> networkRules = new HashMap<>();
  private List<RuleSpec> networkRuleList = List.of();
  /** The owner of each steered source (endpoints are owned by one service). */
  private final Map<IpPrefix, ObjectRef> steeredBy = new HashMap<>();
  /** The tables the services' rules look up, with how many services' rules do. */
  private final Map<Planner.TableKey, Integer> ruleTables = new HashMap<>();
  private Set<Planner.TableKey> routeTables;
  private List<IpPrefix> inCluster = List.of();
  private List<RouteSpec> routes = List.of();
  /** Per steering host, the services that asked a table for it, oldest first; and the hosts in that order. */
  private final Map<String, TreeSet<ServiceOrder>> steerRequesters = new HashMap<>();
  private List<String> hostSequence = List.of();
  private final Map<String, Integer> steerRouteUsers = new HashMap<>();
  private final Map<String, SteerRoute> steerRouteOf = new HashMap<>();
  private List<SteerRoute> steerRoutes = List.of();
  private boolean steerRoutesChanged;
  private int receivers;
  /** The services this node holds the receiving side of ({@link ServicePlan#receiver}); a copy once per change. */
  private final Set<ObjectRef> receiving = new HashSet<>();
  private Set<ObjectRef> receivingCopy = Set.of();
  private PlanTotals.Counter counter = new PlanTotals.Counter();

  public IncrementalPlanner(String nodeName, PlanConfig config) {
    this.nodeName = nodeName;
    this.config = config;
  }

  public void putEgressService(EgressServiceInfo es) {
    EgressServiceInfo old = egressServices.put(es.ref(), es);
    if (es.equals(old)) {
      return;
    }
    if (old != null) {
      countNetwork(old.network(), -1);
    }
    countNetwork(es.network(), 1);
    dirty.add(es.ref());
  }

  public void removeEgressService(ObjectRef ref) {
    EgressServiceInfo old = egressServices.remove(ref);
    if (old != null) {
      countNetwork(old.network(), -1);
      dirty.add(ref);
    }
  }

  private void countNetwork(String network, int delta) {
    if (!network.isEmpty()) {
      networks.merge(network, delta, (a, b) -> a + b == 0 ? null : a + b);
    }
  }

  public void putService(ServiceInfo s) {
    ServiceInfo old = services.put(s.ref(), s);
    if (s.equals(old)) {
      return;
    }
    serviceChanged(s.ref(), old, s);
  }

  public void removeService(ObjectRef ref) {
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

  public void putSlice(EndpointSliceInfo slice) {
    EndpointSliceInfo old = slices.put(slice.ref(), slice);
    if (slice.equals(old)) {
      return;
    }
    if (old != null) {
      detach(old);
    }
    attach(slice);
  }

  public void removeSlice(ObjectRef ref) {
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
  public void putNode(NodeInfo node) {
    NodeInfo old = nodes.put(node.name(), node);
    if (!node.equals(old)) {
      fullNeeded = true;
    }
  }

  public void removeNode(String name) {
    if (nodes.remove(name) != null) {
      fullNeeded = true;
    }
  }

  /** The {@code spec.network} values of the EgressServices: what the node's facts must resolve. */
  public Set<String> networks() {
    return Set.copyOf(networks.keySet());
  }

  /** The full plan's inputs (every object): for the oracle and for callers that need them all. */
  public NodeInputs inputs(NodeObservations node) {
    return new NodeInputs(nodeName, List.copyOf(egressServices.values()), List.copyOf(services.values()),
        List.copyOf(slices.values()), List.copyOf(nodes.values()), node.localAddresses(), node.networks(), config,
        node.existingMarks(), node.existingSteerTables());
  }

  /**
   * The services of the last plan for which this node holds the receiving side: it is their host, or the node their
   * also-receive annotation names (a planned move). Immutable; the same instance until it changes.
   */
  public Set<ObjectRef> receiving() {
    if (receivingCopy == null) {
      receivingCopy = Set.copyOf(receiving);
    }
    return receivingCopy;
  }

  /** The counts of the last plan. */
  public PlanTotals totals() {
    return counter.totals(routes, networkRuleList);
  }

  /** The plan, re-planning only what changed since the last one when it can. */
  public PlanDelta plan(NodeObservations node) {
    if (context == null || fullNeeded || !node.equals(observations)) {
      return planFull(node);
    }
    if (dirty.isEmpty()) {
      return new PlanDelta(last, Set.of(), false, List.of(), List.of(), Map.of(), 0, totals());
    }
    List<ObjectRef> changed = new ArrayList<>(dirty);
    dirty.clear();
    Map<ObjectRef, ServiceEvaluation> evaluations = new HashMap<>();
    Set<IpPrefix> touched = new HashSet<>();
    Set<ObjectRef> affected = new LinkedHashSet<>();
    for (ObjectRef ref : changed) {
      ServicePlan old = plans.get(ref);
      EgressServiceInfo es = egressServices.get(ref);
      if (old == null && es == null) {
        continue;
      }
      affected.add(ref);
      if (old != null) {
        unclaim(old.order(), old.claimAttempts());
        touched.addAll(old.claimAttempts());
      }
      if (es != null) {
        ServiceEvaluation ev = context.evaluateSafely(es);
        List<IpPrefix> attempts = context.claimAttempts(ev);
        claim(ServiceOrder.of(es), attempts);
        touched.addAll(attempts);
        evaluations.put(ref, ev);
      }
    }
    // Whoever else names an address that changed hands may own it now, or no longer.
    for (IpPrefix a : touched) {
      claimants.getOrDefault(a, List.of()).forEach(o -> affected.add(o.ref()));
    }
    Map<ObjectRef, ServicePlan> next = new LinkedHashMap<>();
    for (ObjectRef ref : affected) {
      EgressServiceInfo es = egressServices.get(ref);
      if (es == null) {
        next.put(ref, null);
        continue;
      }
      ServiceEvaluation ev = evaluations.computeIfAbsent(ref, r -> plans.get(r).evaluation());
      ServicePlan p = context.decide(es, ServiceOrder.of(es), ev, this::olderOwner);
      if (context.steerTableMissed()) {
        return planFull(node);
      }
      next.put(ref, p);
    }
    if (steeringHostsMoved(next)) {
      return planFull(node);
    }
    if (config.ruleMode() == RuleMode.MARK) {
      Set<Long> tablesBefore = Set.copyOf(markTables.keySet());
      next.forEach((ref, p) -> {
        countTables(plans.get(ref), -1);
        countTables(p, 1);
      });
      if (!markTables.keySet().equals(tablesBefore)
          && !context.allocateMarks(new TreeSet<>(markTables.keySet())).equals(networkMarks)) {
        return planFull(node);
      }
      next.replaceAll((ref, p) -> p == null ? null : context.withMarks(p, networkMarks));
    }
    return commit(next);
  }

  /**
   * Which table a steering host gets depends on the order in which the whole plan first asks for each host (its
   * oldest service that steers to it): when that order of hosts changes, the tables are left to a full plan.
   */
  private boolean steeringHostsMoved(Map<ObjectRef, ServicePlan> next) {
    boolean touched = false;
    for (Map.Entry<ObjectRef, ServicePlan> e : next.entrySet()) {
      ServicePlan before = plans.get(e.getKey());
      ServicePlan after = e.getValue();
      Set<String> was = before == null ? Set.of() : before.steerHosts();
      Set<String> now = after == null ? Set.of() : after.steerHosts();
      if (was.isEmpty() && now.isEmpty()
          || before != null && after != null && was.equals(now) && before.order().equals(after.order())) {
        continue;
      }
      touched = true;
      if (before != null) {
        requestSteering(before, -1);
      }
      if (after != null) {
        requestSteering(after, 1);
      }
    }
    return touched && !hostSequence().equals(hostSequence);
  }

  private void requestSteering(ServicePlan p, int sign) {
    for (String host : p.steerHosts()) {
      if (sign > 0) {
        steerRequesters.computeIfAbsent(host, h -> new TreeSet<>()).add(p.order());
      } else {
        TreeSet<ServiceOrder> who = steerRequesters.get(host);
        if (who != null) {
          who.remove(p.order());
          if (who.isEmpty()) {
            steerRequesters.remove(host);
          }
        }
      }
    }
  }

  private List<String> hostSequence() {
    List<String> hosts = new ArrayList<>(steerRequesters.keySet());
    hosts.sort((a, b) -> steerRequesters.get(a).first().compareTo(steerRequesters.get(b).first()));
    return hosts;
  }

  private void countTables(ServicePlan p, int sign) {
    if (p == null) {
      return;
    }
    Set<Long> tables = new HashSet<>();
    p.sourceRules().forEach(r -> tables.add(r.table().id().orElseThrow()));
    tables.forEach(t -> markTables.merge(t, sign, (a, b) -> a + b == 0 ? null : a + b));
  }

  private ObjectRef olderOwner(IpPrefix address, ObjectRef service) {
    List<ServiceOrder> who = claimants.get(address);
    if (who == null || who.isEmpty() || who.get(0).ref().equals(service)) {
      return null;
    }
    return who.get(0).ref();
  }

  private void claim(ServiceOrder order, List<IpPrefix> addresses) {
    for (IpPrefix a : addresses) {
      List<ServiceOrder> who = claimants.computeIfAbsent(a, k -> new ArrayList<>(1));
      int i = 0;
      while (i < who.size() && who.get(i).compareTo(order) < 0) {
        i++;
      }
      who.add(i, order);
    }
  }

  private void unclaim(ServiceOrder order, List<IpPrefix> addresses) {
    for (IpPrefix a : addresses) {
      List<ServiceOrder> who = claimants.get(a);
      if (who != null) {
        who.remove(order);
        if (who.isEmpty()) {
          claimants.remove(a);
        }
      }
    }
  }

  /** Replaces the parts of the re-planned services (null: gone) and derives the node-wide parts again. */
  private PlanDelta commit(Map<ObjectRef, ServicePlan> next) {
    Set<IpPrefix> markFlips = new HashSet<>();
    List<RuleSpec> removed = new ArrayList<>();
    List<RuleSpec> added = new ArrayList<>();
    for (Map.Entry<ObjectRef, ServicePlan> e : next.entrySet()) {
      ServicePlan old = plans.get(e.getKey());
      if (old != null) {
        unindex(old, markFlips);
        removed.addAll(old.rules());
      }
      if (e.getValue() != null) {
        index(e.getValue(), markFlips);
        added.addAll(e.getValue().rules());
      }
    }
    // A steered source keeps its steering only with a mark (mark mode); its owner may be a service not re-planned.
    Set<ObjectRef> refilter = new LinkedHashSet<>();
    if (config.ruleMode() == RuleMode.MARK) {
      for (IpPrefix a : markFlips) {
        ObjectRef owner = steeredBy.get(a);
        if (owner != null && !next.containsKey(owner)) {
          refilter.add(owner);
        }
      }
    }
    Map<ObjectRef, ServiceOutcome> outcomes = new HashMap<>();
    for (Map.Entry<ObjectRef, ServicePlan> e : next.entrySet()) {
      ObjectRef ref = e.getKey();
      ServicePlan old = plans.get(ref);
      if (old != null) {
        indexSteered(old, -1);
      }
      ServicePlan p = e.getValue();
      if (p == null) {
        plans.remove(ref);
        slots.set(slotOf.remove(ref), null);
        continue;
      }
      p = withSteering(p);
      indexSteered(p, 1);
      plans.put(ref, p);
      slots.set(slotOf.computeIfAbsent(ref, r -> slots.allocate()), p);
      outcomes.put(ref, p.outcome());
    }
    for (ObjectRef ref : refilter) {
      ServicePlan old = plans.get(ref);
      indexSteered(old, -1);
      ServicePlan p = withSteering(old);
      indexSteered(p, 1);
      plans.put(ref, p);
      slots.set(slotOf.get(ref), p);
    }
    List<RuleSpec> networkBefore = networkRuleList;
    deriveNodeWide();
    if (!networkBefore.equals(networkRuleList)) {
      removed.addAll(networkBefore);
      added.addAll(networkRuleList);
    }
    last = snapshot();
    Set<ObjectRef> changed = new HashSet<>(next.keySet());
    changed.addAll(refilter);
    return new PlanDelta(last, changed, false, removed, added, outcomes, next.size(), totals());
  }

  private ServicePlan withSteering(ServicePlan p) {
    if (config.ruleMode() != RuleMode.MARK) {
      return p;
    }
    List<SteeredEndpoint> kept = p.steered().stream().filter(e -> markedSources.containsKey(e.source())).toList();
    return kept.size() == p.steeredFinal().size() && kept.equals(p.steeredFinal()) ? p : p.withSteeredFinal(kept);
  }

  /** Adds (or takes, with {@link #unindex}) a part to the summaries; not its claims, nor its steering. */
  private void index(ServicePlan p, Set<IpPrefix> markFlips) {
    for (MarkEntry m : p.marks()) {
      if (markedSources.merge(m.source(), 1, Integer::sum) == 1) {
        markFlips.add(m.source());
      }
    }
    p.steered().forEach(e -> steeredBy.put(e.source(), p.service()));
    Planner.tablesLookedUp(p.rules()).forEach(k -> ruleTables.merge(k, 1, Integer::sum));
    p.networkRules().forEach((k, r) -> networkRules.computeIfAbsent(k, x -> new TreeMap<>()).put(p.order(), r));
    if (p.receivesSteered()) {
      receivers++;
    }
    if (p.receiver() && receiving.add(p.service())) {
      receivingCopy = null;
    }
    counter.service(p, 1);
  }

  private void unindex(ServicePlan p, Set<IpPrefix> markFlips) {
    for (MarkEntry m : p.marks()) {
      if (markedSources.merge(m.source(), -1, (a, b) -> a + b == 0 ? null : a + b) == null) {
        markFlips.add(m.source());
      }
    }
    p.steered().forEach(e -> steeredBy.remove(e.source(), p.service()));
    Planner.tablesLookedUp(p.rules()).forEach(k -> ruleTables.merge(k, -1, (a, b) -> a + b == 0 ? null : a + b));
    p.networkRules().forEach((k, r) -> {
      TreeMap<ServiceOrder, RuleSpec> byAge = networkRules.get(k);
      if (byAge != null) {
        byAge.remove(p.order());
        if (byAge.isEmpty()) {
          networkRules.remove(k);
        }
      }
    });
    if (p.receivesSteered()) {
      receivers--;
    }
    if (p.receiver() && receiving.remove(p.service())) {
      receivingCopy = null;
    }
    counter.service(p, -1);
  }

  private void indexSteered(ServicePlan p, int sign) {
    for (SteeredEndpoint e : p.steeredFinal()) {
      String key = e.table() + "/" + e.family();
      if (sign > 0) {
        if (steerRouteUsers.merge(key, 1, Integer::sum) == 1) {
          steerRouteOf.put(key, Planner.steerRoute(e));
          steerRoutesChanged = true;
        }
      } else if (steerRouteUsers.merge(key, -1, (a, b) -> a + b == 0 ? null : a + b) == null) {
        steerRouteOf.remove(key);
        steerRoutesChanged = true;
      }
    }
    counter.steered(p, sign);
  }

  /** The per-network rules, throw routes and steering routes from the summaries (each small). */
  private void deriveNodeWide() {
    List<RuleSpec> perNetwork = new ArrayList<>(networkRules.size());
    networkRules.values().forEach(byAge -> perNetwork.add(byAge.firstEntry().getValue()));
    perNetwork.sort(RuleSpec.ORDER);
    networkRuleList = List.copyOf(perNetwork);
    Set<Planner.TableKey> tables = new HashSet<>(ruleTables.keySet());
    tables.addAll(Planner.tablesLookedUp(networkRuleList));
    if (!tables.equals(routeTables)) {
      routeTables = Set.copyOf(tables);
      List<RouteSpec> r = config.inClusterExclusion() ? new ArrayList<>(Planner.throwRoutes(tables, inCluster))
          : new ArrayList<>();
      r.sort(RouteSpec.ORDER);
      routes = List.copyOf(r);
    }
    if (steerRoutesChanged) {
      List<SteerRoute> sorted = new ArrayList<>(steerRouteOf.values());
      sorted.sort(SteerRoute.ORDER);
      steerRoutes = List.copyOf(sorted);
      steerRoutesChanged = false;
    }
  }

  private DesiredState snapshot() {
    return new DesiredState(nodeName, config.priority(), config.ruleProtocol(),
        slots.list(PlanSlots.Kind.RULES, networkRuleList), slots.list(PlanSlots.Kind.SNAT, List.of()), inCluster,
        slots.list(PlanSlots.Kind.OUTCOMES, List.of()), config.ruleMode(), config.markMask(),
        slots.list(PlanSlots.Kind.MARKS, List.of()), networkMarks, routes, context.refusedInputs(),
        new SteeringPlan(slots.list(PlanSlots.Kind.STEERED, List.of()), steerRoutes, receivers > 0,
            config.steering().port(), context.steeringPeers()),
        slots.list(PlanSlots.Kind.HELD, List.of()));
  }

  /** Every service planned again from the inputs, as {@link Planner#plan} does; the summaries rebuilt. */
  public PlanDelta planFull(NodeObservations node) {
    Planner.Full full = Planner.planFull(inputs(node));
    context = full.context();
    context.freezeSteerTables();
    observations = node;
    networkMarks = full.networkMarks();
    dirty.clear();
    fullNeeded = false;
    plans.clear();
    slotOf.clear();
    claimants.clear();
    markedSources.clear();
    markTables.clear();
    networkRules.clear();
    steeredBy.clear();
    ruleTables.clear();
    steerRouteUsers.clear();
    steerRouteOf.clear();
    steerRequesters.clear();
    receivers = 0;
    receiving.clear();
    receivingCopy = null;
    counter = new PlanTotals.Counter();
    Set<IpPrefix> ignored = new HashSet<>();
    List<ServicePlan> parts = full.services();
    for (int i = 0; i < parts.size(); i++) {
      ServicePlan p = parts.get(i);
      if (plans.put(p.service(), p) != null) {
        throw new IllegalStateException("two EgressServices " + p.service());
      }
      slotOf.put(p.service(), i);
      claim(p.order(), p.claimAttempts());
      countTables(config.ruleMode() == RuleMode.MARK ? p : null, 1);
      index(p, ignored);
      indexSteered(p, 1);
      requestSteering(p, 1);
    }
    hostSequence = hostSequence();
    slots.reset(parts);
    inCluster = full.desired().inCluster();
    routeTables = null; // derived again below
    steerRoutesChanged = true;
    deriveNodeWide();
    last = full.desired();
    return new PlanDelta(last, Set.of(), true, List.of(), List.of(), Map.of(), parts.size(), totals());
  }
}

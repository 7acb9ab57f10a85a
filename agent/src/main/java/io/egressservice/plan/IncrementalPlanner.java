package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
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

/**
 * The node's plan kept up to date as its inputs change, re-planning only the EgressServices whose inputs
 * changed (and those a change couples them to), through the same per-service code as {@link Planner}. Pure: the
 * caller feeds it the cluster's objects as plan inputs, one at a time as they change, and what the node shows
 * ({@link NodeObservations}); {@link #plan} gives what {@link Planner#plan} would give for the same inputs, with
 * the lists in another order.
 *
 * <p>What a change touches is {@link PlannerInputs}' to say. A re-planned service whose endpoint addresses (old or
 * new) another service also names re-plans that one too (the older one owns a shared endpoint: {@link
 * EndpointClaims}). A Node, what the node shows, a change of the networks' marks or of who is refused one (mark
 * mode), or a steering host that gets or loses a table ({@link SteeringHostOrder}), plans everything again. The node-wide parts are derived
 * from summaries of the services' parts ({@link NodeWideParts}).
 *
 * <p>One instance serves one thread at a time.
 */
public final class IncrementalPlanner {
  private final String nodeName;
  private final PlanConfig config;
  private final PlannerInputs inputs;

  // The last plan: each service's part, and the node-wide parts with the summaries they are derived from.
  private PlanContext context;
  private NodeObservations observations;
  private DesiredState last;
  private MarkAllocation marks = MarkAllocation.NONE;
  /** Mark mode: what each service that needs marks needs, oldest first (what {@link #marks} is handed out from). */
  private final TreeMap<ServiceOrder, NetworkMarks.Need> markNeeds = new TreeMap<>();
  private final Map<ObjectRef, ServicePlan> plans = new HashMap<>();
  private final Map<ObjectRef, Integer> slotOf = new HashMap<>();
  private final PlanSlots slots = new PlanSlots();
  private final EndpointClaims claims = new EndpointClaims();
  private final SteeringHostOrder steeringHosts = new SteeringHostOrder();
  private final NodeWideParts nodeWide;

  public IncrementalPlanner(String nodeName, PlanConfig config) {
    this.nodeName = nodeName;
    this.config = config;
    this.inputs = new PlannerInputs(nodeName, config);
    this.nodeWide = new NodeWideParts(config);
  }

  public void putEgressService(EgressServiceInfo es) {
    inputs.putEgressService(es);
  }

  public void removeEgressService(ObjectRef ref) {
    inputs.removeEgressService(ref);
  }

  public void putService(ServiceInfo s) {
    inputs.putService(s);
  }

  public void removeService(ObjectRef ref) {
    inputs.removeService(ref);
  }

  public void putSlice(EndpointSliceInfo slice) {
    inputs.putSlice(slice);
  }

  public void removeSlice(ObjectRef ref) {
    inputs.removeSlice(ref);
  }

  /** A Namespace's labels: with the policy enforced, its EgressServices are planned again. */
  public void putNamespace(NamespaceInfo ns) {
    inputs.putNamespace(ns);
  }

  public void removeNamespace(String name) {
    inputs.removeNamespace(name);
  }

  /** The EgressServicePolicy (or its absence) as enforced or not: a change plans everything. */
  public void setGrantPolicy(GrantPolicy policy) {
    inputs.setGrantPolicy(policy);
  }

  /** Nodes are read by every service (addresses, pod CIDRs, steering hosts): a change plans everything. */
  public void putNode(NodeInfo node) {
    inputs.putNode(node);
  }

  public void removeNode(String name) {
    inputs.removeNode(name);
  }

  /** The {@code spec.network} values of the EgressServices: what the node's facts must resolve. */
  public Set<String> networks() {
    return inputs.networks();
  }

  /** The full plan's inputs (every object): for the oracle and for callers that need them all. */
  public NodeInputs inputs(NodeObservations node) {
    return inputs.all(node);
  }

  /**
   * The services of the last plan for which this node holds the receiving side: it is their host, or the node their
   * also-receive annotation names (a planned move). Immutable; the same instance until it changes.
   */
  public Set<ObjectRef> receiving() {
    return nodeWide.receiving();
  }

  /** The counts of the last plan. */
  public PlanTotals totals() {
    return nodeWide.totals();
  }

  /** The plan, re-planning only what changed since the last one when it can. */
  public PlanDelta plan(NodeObservations node) {
    if (context == null || inputs.fullNeeded() || !node.equals(observations)) {
      return planFull(node);
    }
    if (inputs.nothingChanged()) {
      return new PlanDelta(last, Set.of(), false, List.of(), List.of(), Map.of(), 0, totals());
    }
    List<ObjectRef> changed = inputs.drainDirty();
    Map<ObjectRef, ServiceEvaluation> evaluations = new HashMap<>();
    Set<IpPrefix> touched = new HashSet<>();
    Set<ObjectRef> affected = new LinkedHashSet<>();
    for (ObjectRef ref : changed) {
      ServicePlan old = plans.get(ref);
      EgressServiceInfo es = inputs.egressService(ref);
      if (old == null && es == null) {
        continue;
      }
      affected.add(ref);
      if (old != null) {
        claims.unclaim(old.order(), old.claimAttempts());
        touched.addAll(old.claimAttempts());
      }
      if (es != null) {
        ServiceEvaluation ev = context.evaluateSafely(es);
        List<IpPrefix> attempts = context.claimAttempts(ev);
        claims.claim(ServiceOrder.of(es), attempts);
        touched.addAll(attempts);
        evaluations.put(ref, ev);
      }
    }
    // Whoever else names an address that changed hands may own it now, or no longer.
    for (IpPrefix a : touched) {
      claims.claimants(a).forEach(o -> affected.add(o.ref()));
    }
    Map<ObjectRef, ServicePlan> next = new LinkedHashMap<>();
    for (ObjectRef ref : affected) {
      EgressServiceInfo es = inputs.egressService(ref);
      if (es == null) {
        next.put(ref, null);
        continue;
      }
      ServiceEvaluation ev = evaluations.computeIfAbsent(ref, r -> plans.get(r).evaluation());
      ServicePlan p = context.decide(es, ServiceOrder.of(es), ev, claims::olderOwner);
      if (context.steerTableMissed()) {
        return planFull(node);
      }
      next.put(ref, p);
    }
    if (steeringHosts.movedBy(next, plans)) {
      return planFull(node);
    }
    if (config.ruleMode() == RuleMode.MARK) {
      // Who gets marks depends on every service's needs, oldest first: when a need changed and so did the
      // allocation (marks, or who is refused), every service may be touched.
      boolean needsChanged = false;
      for (Map.Entry<ObjectRef, ServicePlan> e : next.entrySet()) {
        needsChanged |= replaceNeed(plans.get(e.getKey()), e.getValue());
      }
      if (needsChanged && !context.allocateMarks(markNeeds.values()).equals(marks)) {
        return planFull(node);
      }
      next.replaceAll((ref, p) -> p == null ? null : context.withMarks(p, marks));
    }
    return commit(next);
  }

  /** Mark mode: takes the old part's need out of {@link #markNeeds} and puts the new one's in; whether it changed. */
  private boolean replaceNeed(ServicePlan old, ServicePlan now) {
    NetworkMarks.Need before = old == null ? null : NetworkMarks.Need.of(old);
    NetworkMarks.Need after = now == null ? null : NetworkMarks.Need.of(now);
    if (java.util.Objects.equals(before, after)) {
      return false;
    }
    if (before != null) {
      markNeeds.remove(before.order());
    }
    if (after != null && !after.tables().isEmpty()) {
      markNeeds.put(after.order(), after);
    }
    return !(before == null || before.tables().isEmpty()) || !(after == null || after.tables().isEmpty());
  }

  /** Replaces the parts of the re-planned services (null: gone) and derives the node-wide parts again. */
  private PlanDelta commit(Map<ObjectRef, ServicePlan> next) {
    Set<IpPrefix> markFlips = new HashSet<>();
    List<RuleSpec> removed = new ArrayList<>();
    List<RuleSpec> added = new ArrayList<>();
    for (Map.Entry<ObjectRef, ServicePlan> e : next.entrySet()) {
      ServicePlan old = plans.get(e.getKey());
      if (old != null) {
        nodeWide.unindex(old, markFlips);
        removed.addAll(old.rules());
      }
      if (e.getValue() != null) {
        nodeWide.index(e.getValue(), markFlips);
        added.addAll(e.getValue().rules());
      }
    }
    // A steered source keeps its steering only with a mark (mark mode); its owner may be a service not re-planned.
    Set<ObjectRef> refilter = new LinkedHashSet<>();
    if (config.ruleMode() == RuleMode.MARK) {
      for (IpPrefix a : markFlips) {
        ObjectRef owner = nodeWide.steeredBy(a);
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
        nodeWide.indexSteered(old, -1);
      }
      ServicePlan p = e.getValue();
      if (p == null) {
        plans.remove(ref);
        slots.set(slotOf.remove(ref), null);
        continue;
      }
      p = withSteering(p);
      nodeWide.indexSteered(p, 1);
      plans.put(ref, p);
      slots.set(slotOf.computeIfAbsent(ref, r -> slots.allocate()), p);
      outcomes.put(ref, p.outcome());
    }
    for (ObjectRef ref : refilter) {
      ServicePlan old = plans.get(ref);
      nodeWide.indexSteered(old, -1);
      ServicePlan p = withSteering(old);
      nodeWide.indexSteered(p, 1);
      plans.put(ref, p);
      slots.set(slotOf.get(ref), p);
    }
    List<RuleSpec> networkBefore = nodeWide.networkRules();
    nodeWide.derive();
    if (!networkBefore.equals(nodeWide.networkRules())) {
      removed.addAll(networkBefore);
      added.addAll(nodeWide.networkRules());
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
    List<SteeredEndpoint> kept = p.steered().stream().filter(e -> nodeWide.marked(e.source())).toList();
    return kept.size() == p.steeredFinal().size() && kept.equals(p.steeredFinal()) ? p : p.withSteeredFinal(kept);
  }

  private DesiredState snapshot() {
    return DesiredState.builder().node(nodeName).priority(config.priority()).ruleProtocol(config.ruleProtocol())
        .rules(slots.list(PlanSlots.Kind.RULES, nodeWide.networkRules()))
        .snat(slots.list(PlanSlots.Kind.SNAT, List.of()))
        .inCluster(nodeWide.inCluster())
        .services(slots.list(PlanSlots.Kind.OUTCOMES, List.of()))
        .ruleMode(config.ruleMode()).markMask(config.markMask())
        .marks(slots.list(PlanSlots.Kind.MARKS, List.of())).networkMarks(marks.networkMarks())
        .routes(nodeWide.routes())
        .refusedInputs(context.refusedInputs())
        .steering(new SteeringPlan(slots.list(PlanSlots.Kind.STEERED, List.of()), nodeWide.steerRoutes(),
            nodeWide.receivesSteered(), config.steering().port(), context.steeringPeers()))
        .held(slots.list(PlanSlots.Kind.HELD, List.of()))
        .build();
  }

  /** Every service planned again from the inputs, as {@link Planner#plan} does; the summaries rebuilt. */
  public PlanDelta planFull(NodeObservations node) {
    Planner.Full full = Planner.planFull(inputs(node));
    context = full.context();
    context.freezeSteerTables();
    observations = node;
    marks = full.marks();
    markNeeds.clear();
    inputs.fullyPlanned(context);
    plans.clear();
    slotOf.clear();
    claims.clear();
    nodeWide.clear();
    steeringHosts.clear();
    Set<IpPrefix> ignored = new HashSet<>();
    List<ServicePlan> parts = full.services();
    for (int i = 0; i < parts.size(); i++) {
      ServicePlan p = parts.get(i);
      if (plans.put(p.service(), p) != null) {
        throw new IllegalStateException("two EgressServices " + p.service());
      }
      slotOf.put(p.service(), i);
      claims.claim(p.order(), p.claimAttempts());
      if (config.ruleMode() == RuleMode.MARK) {
        replaceNeed(null, p);
      }
      nodeWide.index(p, ignored);
      nodeWide.indexSteered(p, 1);
      steeringHosts.request(p, 1);
    }
    steeringHosts.settle();
    slots.reset(parts);
    nodeWide.rebuilt(full.desired().inCluster());
    last = full.desired();
    return new PlanDelta(last, Set.of(), true, List.of(), List.of(), Map.of(), parts.size(), totals());
  }
}

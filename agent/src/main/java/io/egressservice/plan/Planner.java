package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The pure heart of the agent: {@link NodeInputs} to {@link DesiredState} (DESIGN.md section 1). No
 * kernel, no API, no clock: the same inputs always give the same, sorted output. This is the full plan
 * (every service, oldest first); {@link IncrementalPlanner} re-plans only what changed, through the same
 * per-service code ({@link PlanContext}), and this plan is its oracle.
 */
public final class Planner {
  /** The start of the reason when a node has local endpoints it cannot steer (a node-local problem to report). */
  public static final String NOT_STEERED = "not steered to host ";
  /** The start of the reason when a service is refused on a node because mark mode's marks ran out for it. */
  public static final String NO_FREE_MARK = "no free mark for ";

  private Planner() {}

  public static DesiredState plan(NodeInputs in) {
    return planFull(in).desired();
  }

  /** A full plan with what it was made of: the context and every service's part, oldest first. */
  record Full(PlanContext context, List<ServicePlan> services, MarkAllocation marks, DesiredState desired) {}

  static Full planFull(NodeInputs in) {
    PlanContext ctx = new PlanContext(in);
    List<EgressServiceInfo> ordered = new ArrayList<>(in.egressServices());
    // Oldest first: an endpoint claimed by two EgressServices belongs to the older one.
    ordered.sort((a, b) -> ServiceOrder.of(a).compareTo(ServiceOrder.of(b)));
    Map<IpPrefix, ObjectRef> claims = new HashMap<>();
    List<ServicePlan> plans = new ArrayList<>(ordered.size());
    for (EgressServiceInfo es : ordered) {
      plans.add(ctx.plan(es, ServiceOrder.of(es), claims::putIfAbsent));
    }
    MarkAllocation allocation = MarkAllocation.NONE;
    if (ctx.config().ruleMode() == RuleMode.MARK) {
      // Oldest first, all or nothing: a service refused a mark gets nothing on the node (NetworkMarks).
      allocation = ctx.allocateMarks(plans.stream().map(NetworkMarks.Need::of).toList());
      MarkAllocation marks = allocation;
      plans.replaceAll(p -> ctx.withMarks(p, marks));
      Set<IpPrefix> marked = markedSources(plans);
      plans.replaceAll(p -> p.withSteeredFinal(keepMarked(p.steered(), marked)));
    }
    return new Full(ctx, plans, allocation, assemble(ctx, plans, allocation.networkMarks()));
  }

  private static Set<IpPrefix> markedSources(List<ServicePlan> plans) {
    Set<IpPrefix> marked = new HashSet<>();
    plans.forEach(p -> p.marks().forEach(m -> marked.add(m.source())));
    return marked;
  }

  /** A steered source left without a mark (no free mark) is not steered: its outcome says why. */
  private static List<SteeredEndpoint> keepMarked(List<SteeredEndpoint> steered, Set<IpPrefix> marked) {
    return steered.stream().filter(e -> marked.contains(e.source())).toList();
  }

  private static DesiredState assemble(PlanContext ctx, List<ServicePlan> plans, Map<Long, Long> networkMarks) {
    PlanConfig config = ctx.config();
    List<RuleSpec> rules = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    List<MarkEntry> marks = new ArrayList<>();
    List<SteeredEndpoint> steered = new ArrayList<>();
    List<HeldEndpoint> held = new ArrayList<>();
    Map<ObjectRef, ServiceOutcome> outcomes = new LinkedHashMap<>();
    Map<String, RuleSpec> perNetwork = new LinkedHashMap<>();
    boolean receives = false;
    for (ServicePlan p : plans) {
      rules.addAll(p.rules());
      snat.addAll(p.snat());
      marks.addAll(p.marks());
      steered.addAll(p.steeredFinal());
      held.addAll(p.held());
      outcomes.put(p.service(), p.outcome());
      p.networkRules().forEach(perNetwork::putIfAbsent);
      receives |= p.receivesSteered();
    }
    rules.addAll(perNetwork.values());
    List<IpPrefix> inCluster = List.of();
    List<RouteSpec> routes = new ArrayList<>();
    if (config.inClusterExclusion()) {
      inCluster = ctx.inClusterSet();
      routes = throwRoutes(tablesLookedUp(rules), inCluster);
    }
    rules.sort(RuleSpec.ORDER);
    routes.sort(RouteSpec.ORDER);
    snat.sort(SnatEntry.ORDER);
    marks.sort(MarkEntry.ORDER);
    List<ServiceOutcome> outcomeList = new ArrayList<>(outcomes.values());
    outcomeList.sort((a, b) -> a.service().compareTo(b.service()));
    steered.sort(SteeredEndpoint.ORDER);
    held.sort(HeldEndpoint.ORDER);
    return DesiredState.builder().node(ctx.nodeName()).priority(config.priority()).ruleProtocol(config.ruleProtocol())
        .rules(rules).snat(snat).inCluster(inCluster).services(outcomeList)
        .ruleMode(config.ruleMode()).markMask(config.markMask()).marks(marks).networkMarks(networkMarks)
        .routes(routes).refusedInputs(ctx.refusedInputs())
        .steering(new SteeringPlan(steered, steerRoutes(steered), receives, config.steering().port(),
            ctx.steeringPeers()))
        .held(held)
        .build();
  }

  /** A table a rule looks up, per family. */
  record TableKey(IpFamily family, TableRef table) {}

  static Set<TableKey> tablesLookedUp(Collection<RuleSpec> rules) {
    Set<TableKey> out = new HashSet<>();
    IpFamily lastFamily = null;
    TableRef lastTable = null;
    for (RuleSpec r : rules) {
      // One pass over thousands of rules, adding a table only when it differs from the previous one's.
      if (r.family() == lastFamily && r.table().equals(lastTable)) {
        continue;
      }
      out.add(new TableKey(r.family(), r.table()));
      lastFamily = r.family();
      lastTable = r.table();
    }
    return out;
  }

  /**
   * {@code throw <destination>} for each in-cluster destination, in every table that a rule at P looks
   * up (a source's table in source mode, a network's in mark mode), per family that has such rules.
   * Only opted-in traffic looks there; a throw hands its lookup back to the rules after P, as if the
   * agent were not there. The route count is O(destinations x tables), the rule count unchanged.
   */
  static List<RouteSpec> throwRoutes(Collection<TableKey> tables, List<IpPrefix> inCluster) {
    Map<IpFamily, Map<String, TableRef>> byName = new EnumMap<>(IpFamily.class);
    tables.stream().sorted((a, b) -> a.table().name().compareTo(b.table().name()))
        .forEach(k -> byName.computeIfAbsent(k.family(), f -> new HashMap<>()).putIfAbsent(k.table().name(), k.table()));
    List<RouteSpec> out = new ArrayList<>();
    for (Map.Entry<IpFamily, Map<String, TableRef>> e : byName.entrySet()) {
      for (TableRef table : e.getValue().values()) {
        for (IpPrefix p : inCluster) {
          if (p.family() == e.getKey()) {
            out.add(new RouteSpec(e.getKey(), table, p));
          }
        }
      }
    }
    return out;
  }

  /** One route per steering table and family, to its host. */
  static List<SteerRoute> steerRoutes(Collection<SteeredEndpoint> steered) {
    Map<String, SteerRoute> routes = new HashMap<>();
    for (SteeredEndpoint e : steered) {
      routes.putIfAbsent(e.table() + "/" + e.family(), steerRoute(e));
    }
    List<SteerRoute> sorted = new ArrayList<>(routes.values());
    sorted.sort(SteerRoute.ORDER);
    return sorted;
  }

  static SteerRoute steerRoute(SteeredEndpoint e) {
    return new SteerRoute(e.family(), e.table(), e.host(), e.hostAddress());
  }
}

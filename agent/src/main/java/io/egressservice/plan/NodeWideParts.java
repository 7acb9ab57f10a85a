package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * The node-wide parts of an incremental plan (per-network rules, throw routes, steering routes, whether this node
 * receives steered traffic, the totals), derived from summaries of every service's part that are small and updated
 * as parts come and go: so a re-planned service costs the size of its own part, not of the plan.
 */
final class NodeWideParts {
  private final PlanConfig config;
  /** Mark mode: how many mark entries each source has, and each network's rule by age. */
  private final Map<IpPrefix, Integer> markedSources = new HashMap<>();
  private final Map<String, TreeMap<ServiceOrder, RuleSpec>> networkRules = new HashMap<>();
  private List<RuleSpec> networkRuleList = List.of();
  /** The owner of each steered source (endpoints are owned by one service). */
  private final Map<IpPrefix, ObjectRef> steeredBy = new HashMap<>();
  /** The tables the services' rules look up, with how many services' rules do. */
  private final Map<Planner.TableKey, Integer> ruleTables = new HashMap<>();
  private Set<Planner.TableKey> routeTables;
  private List<IpPrefix> inCluster = List.of();
  private List<RouteSpec> routes = List.of();
  private final Map<String, Integer> steerRouteUsers = new HashMap<>();
  private final Map<String, SteerRoute> steerRouteOf = new HashMap<>();
  private List<SteerRoute> steerRoutes = List.of();
  private boolean steerRoutesChanged;
  private int receivers;
  /** The services this node holds the receiving side of ({@link ServicePlan#receiver}); copied when that changes. */
  private final Set<ObjectRef> receiving = new HashSet<>();
  private Set<ObjectRef> receivingCopy = Set.of();
  /**
   * Services that entered or left {@link #receiving} an odd number of times since the copy: the copy is stale only
   * while this is not empty. A service planned again leaves and re-enters (no change), and copying every received
   * service for that would be O(services) of garbage per change.
   */
  private final Set<ObjectRef> receivingFlips = new HashSet<>();
  private PlanTotals.Counter counter = new PlanTotals.Counter();

  NodeWideParts(PlanConfig config) {
    this.config = config;
  }

  /** Adds (or takes, with {@link #unindex}) a part to the summaries; not its claims, nor its steering. */
  void index(ServicePlan p, Set<IpPrefix> markFlips) {
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
      flipReceiving(p.service());
    }
    counter.service(p, 1);
  }

  void unindex(ServicePlan p, Set<IpPrefix> markFlips) {
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
      flipReceiving(p.service());
    }
    counter.service(p, -1);
  }

  /** Adds (sign 1) or takes (-1) the steering routes of a part's steered endpoints (as they end up). */
  void indexSteered(ServicePlan p, int sign) {
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

  /** Mark mode: whether some service marks {@code source}. */
  boolean marked(IpPrefix source) {
    return markedSources.containsKey(source);
  }

  /** The service that steers {@code source}, or null. */
  ObjectRef steeredBy(IpPrefix source) {
    return steeredBy.get(source);
  }

  /** The per-network rules, throw routes and steering routes from the summaries (each small). */
  void derive() {
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

  /** Forgets every part: a full plan indexes them all again, then {@link #rebuilt}. */
  void clear() {
    markedSources.clear();
    networkRules.clear();
    steeredBy.clear();
    ruleTables.clear();
    steerRouteUsers.clear();
    steerRouteOf.clear();
    receivers = 0;
    receiving.clear();
    receivingFlips.clear();
    receivingCopy = null;
    counter = new PlanTotals.Counter();
  }

  /** Every part indexed again after {@link #clear}, with the full plan's in-cluster set: derives everything. */
  void rebuilt(List<IpPrefix> inClusterSet) {
    inCluster = inClusterSet;
    routeTables = null; // derived again below
    steerRoutesChanged = true;
    derive();
  }

  /** The services this node holds the receiving side of; immutable, the same instance until it changes. */
  Set<ObjectRef> receiving() {
    if (receivingCopy == null || !receivingFlips.isEmpty()) {
      receivingCopy = Set.copyOf(receiving);
      receivingFlips.clear();
    }
    return receivingCopy;
  }

  private void flipReceiving(ObjectRef service) {
    if (!receivingFlips.remove(service)) {
      receivingFlips.add(service);
    }
  }

  PlanTotals totals() {
    return counter.totals(routes, networkRuleList);
  }

  /** Mark mode: one {@code fwmark} rule per family and network, the oldest service's. */
  List<RuleSpec> networkRules() {
    return networkRuleList;
  }

  List<IpPrefix> inCluster() {
    return inCluster;
  }

  List<RouteSpec> routes() {
    return routes;
  }

  List<SteerRoute> steerRoutes() {
    return steerRoutes;
  }

  /** Whether some service's endpoints arrive here steered (the steering port listens). */
  boolean receivesSteered() {
    return receivers > 0;
  }
}

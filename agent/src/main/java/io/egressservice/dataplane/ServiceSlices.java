package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.EgressNftables.NftState;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.nft.MarkNftables;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.MarkNftables.MarkState;
import io.egressservice.nft.ServiceComments;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.HeldEndpoint;
import io.egressservice.plan.MarkEntry;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.RouteSpec;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.ServiceParts;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.SteeredEndpoint;
import io.egressservice.plan.SteeringPlan;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * Pure: the parts of a desired state that belong to some services (the fast path diffs only those), and what
 * {@link Dataplane#observe()} returns once the kernel holds a state (the fast path's stand-in for a dump).
 */
final class ServiceSlices {
  private ServiceSlices() {}

  /**
   * The items of {@code services} in a state, with the state's node-wide parts.
   *
   * @param nodeRules the rules of no service (mark mode's per-network rules): node-wide, kept in {@code state}
   */
  record Slice(DesiredState state, List<RuleSpec> nodeRules) {}

  /**
   * What {@code services} own in each list of {@code d}, and the rules of no service: on an incremental plan's lists
   * O(those services' items), see {@link ServiceParts}.
   */
  static Slice restrict(DesiredState d, Set<ObjectRef> services) {
    ServiceParts.Split<RuleSpec> ruleSplit = ServiceParts.split(d.rules(), services, RuleSpec::service);
    List<RuleSpec> nodeRules = ruleSplit.ofNoService();
    List<RuleSpec> rules = new ArrayList<>(ruleSplit.ofServices());
    rules.addAll(nodeRules);
    List<SnatEntry> snat = ServiceParts.of(d.snat(), services, SnatEntry::service);
    List<MarkEntry> marks = ServiceParts.of(d.marks(), services, MarkEntry::service);
    List<SteeredEndpoint> steered = ServiceParts.of(d.steering().endpoints(), services, SteeredEndpoint::service);
    List<HeldEndpoint> held = ServiceParts.of(d.held(), services, HeldEndpoint::service);
    SteeringPlan steering = new SteeringPlan(steered, d.steering().routes(), d.steering().receives(),
        d.steering().port());
    DesiredState slice = d.toBuilder().rules(rules).snat(snat).services(List.of()).marks(marks).refusedInputs(List.of())
        .steering(steering).held(held).build();
    return new Slice(slice, nodeRules);
  }

  /**
   * Why two states differ outside their services (then only a full reconcile applies the difference), or empty.
   * Compares only the node-wide parts, which are small (prefixes, tables, hosts), never the per-service lists.
   */
  static Optional<String> nodeWideDifference(DesiredState a, DesiredState b) {
    if (a.priority() != b.priority() || a.ruleProtocol() != b.ruleProtocol()) {
      return Optional.of("rule priority or protocol");
    }
    if (a.ruleMode() != b.ruleMode() || a.markMask() != b.markMask()) {
      return Optional.of("rule mode or mark mask");
    }
    if (!a.networkMarks().equals(b.networkMarks())) {
      return Optional.of("network marks");
    }
    if (!a.inCluster().equals(b.inCluster())) {
      return Optional.of("in-cluster destinations");
    }
    if (!a.routes().equals(b.routes())) {
      return Optional.of("throw routes");
    }
    SteeringPlan sa = a.steering();
    SteeringPlan sb = b.steering();
    if (!sa.routes().equals(sb.routes()) || sa.receives() != sb.receives() || sa.port() != sb.port()) {
      return Optional.of("steering routes or device");
    }
    return Optional.empty();
  }

  /** Whether the SNAT table exists once the kernel holds {@code d} (it is created with the first SNAT or steering route). */
  static boolean needsSnatTable(DesiredState d) {
    return !d.snat().isEmpty() || !d.steering().routes().isEmpty();
  }

  /**
   * What {@link Dataplane#observe()} (with the reverse-path facts {@code reversePath}) would return once a
   * reconcile of {@code d} succeeded, as far as {@link Differ#diff(DesiredState, Map, ObservedState)} reads it:
   * the rules and throw routes of the plan, an intact SNAT table with its elements ({@code tablePresent}: it
   * exists, which a state without SNAT does not tell), the mark objects in mark mode. Steering is left out:
   * it is node-wide, and the fast path never changes it.
   */
  static ObservedState expectedObservation(DesiredState d, ReversePath.State reversePath, boolean tablePresent) {
    List<Rule> rules = new ArrayList<>(Differ.wantedRules(d).keySet());
    List<Route> routes = new ArrayList<>();
    for (RouteSpec r : d.routes()) {
      routes.add(Differ.toRoute(r, d.ruleProtocol()));
    }
    Set<SnatElement> snat = new HashSet<>();
    for (SnatEntry e : d.snat()) {
      snat.add(new SnatElement(e.source(), e.to(), ServiceComments.of(e.service())));
    }
    boolean table = tablePresent || needsSnatTable(d);
    NftState nft = new NftState(table, table, table ? snat : Set.of(), table
        ? EgressNftables.merge(d.inCluster().stream().map(EgressNftables.IpRange::of).toList()) : List.of());
    ReversePath.State rp = new ReversePath.State(reversePath.strictUplinks(), Map.of());
    return new ObservedState(rules, routes, nft, markState(d, rp), rp, SteeringState.absent());
  }

  private static MarkState markState(DesiredState d, ReversePath.State rp) {
    if (d.ruleMode() != RuleMode.MARK || d.networkMarks().isEmpty()) {
      return new MarkState(false, Set.of(), Map.of(), Map.of(), Map.of(), Map.of());
    }
    Map<String, Boolean> hooks = new HashMap<>();
    hooks.put(MarkNftables.PREROUTING, true);
    hooks.put(MarkNftables.OUTPUT, true);
    if (!rp.strictUplinks().isEmpty()) {
      hooks.put(MarkNftables.REPLY, true);
    }
    Map<Long, Long> masks = new HashMap<>();
    d.networkMarks().keySet().forEach(t -> masks.put(t, d.markMask()));
    return new MarkState(true, Set.of("mark_v4", "mark_v6"), hooks, d.networkMarks(), masks, markElements(d),
        rp.strictUplinks().isEmpty() ? Optional.empty() : Optional.of(rp.strictUplinks()));
  }

  /** The mark map's elements for a state, by source. */
  static Map<IpPrefix, MarkElement> markElements(DesiredState d) {
    Map<IpPrefix, MarkElement> out = new HashMap<>();
    for (MarkEntry m : d.marks()) {
      out.put(m.source(), new MarkElement(m.source(), m.table(), ServiceComments.of(m.service())));
    }
    return out;
  }

  /** How each endpoint's traffic leaves: the key of the conntrack restart (later entries win, as in a full reconcile). */
  static Map<IpPrefix, String> treatments(DesiredState d) {
    Map<IpPrefix, String> now = new HashMap<>();
    d.snat().forEach(e -> now.put(e.source(), "snat " + e.to()));
    d.steering().endpoints().forEach(e -> now.put(e.source(), "steer " + e.host()));
    d.held().forEach(h -> now.put(h.source(), "held"));
    return now;
  }
}

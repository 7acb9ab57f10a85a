package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import com.fasterxml.jackson.databind.node.ArrayNode;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.MarkNftables;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.MarkNftables.MarkPlan;
import io.egressservice.nft.MarkNftables.MarkState;
import io.egressservice.model.RuleMode;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.EgressNftables.NftChange;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.nft.ServiceComments;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.RouteSpec;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.SnatEntry;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/** Pure: the plan against the observed owned state, as an ordered {@link ChangeSet}. */
public final class Differ {
  static final String IN_CLUSTER = "(in-cluster)";
  static final String BASE = "(base)";
  static final String UNKNOWN = "(unknown)";
  static final String STEERING = "(steering)";

  /** The order of {@code ip rule show}; field by field, since building text per comparison is slow at 10,000 rules. */
  private static final Comparator<Rule> RULE_ORDER = Comparator.comparing(Rule::family)
      .thenComparingInt(Rule::priority)
      .thenComparing(r -> r.source().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
      .thenComparing(r -> r.destination().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
      .thenComparingLong(r -> r.fwmark().orElse(0))
      .thenComparingInt(Rule::table);

  private Differ() {}

  public static ChangeSet diff(DesiredState desired, ObservedState observed) {
    return diff(desired, wantedRules(desired), observed);
  }

  /** With the plan's rules already built by {@link #wantedRules}, and the steering device's MTU. */
  public static ChangeSet diff(DesiredState desired, Map<Rule, RuleSpec> wanted, ObservedState observed, int steeringMtu) {
    return diff(desired, wanted, observed, steeringMtu, AppliedRules.none());
  }

  /** The same, naming each deleted rule by what {@code applied} says it was applied for. */
  static ChangeSet diff(DesiredState desired, Map<Rule, RuleSpec> wanted, ObservedState observed, int steeringMtu,
      AppliedRules applied) {
    ChangeSet rulesAndNft = diff(desired, wanted, observed, applied);
    SteeringChanges steering = SteeringDataplane.diff(desired.steering(), observed.steering(), desired.ruleProtocol(),
        steeringMtu);
    List<Change> described = new ArrayList<>(SteeringDataplane.describe(steering));
    described.addAll(rulesAndNft.changes());
    return new ChangeSet(rulesAndNft.ruleAdds(), rulesAndNft.nft(), rulesAndNft.ensureNftBase(),
        rulesAndNft.markCommands(), rulesAndNft.ruleDeletes(), rulesAndNft.routeAdds(), rulesAndNft.routeDeletes(),
        described, rulesAndNft.srcValidMark(), steering, rulesAndNft.markOutcome());
  }

  /** The plan's rules as netlink rules, in plan order, each with the rule of the plan it came from. */
  public static Map<Rule, RuleSpec> wantedRules(DesiredState desired) {
    Map<Rule, RuleSpec> wanted = new LinkedHashMap<>();
    for (RuleSpec spec : desired.rules()) {
      wanted.put(toRule(spec, desired.ruleProtocol(), desired.markMask()), spec);
    }
    return wanted;
  }

  /** With the plan's rules already built by {@link #wantedRules}. */
  public static ChangeSet diff(DesiredState desired, Map<Rule, RuleSpec> wanted, ObservedState observed) {
    return diff(desired, wanted, observed, AppliedRules.none());
  }

  /** The same, naming each deleted rule by what {@code applied} says it was applied for. */
  static ChangeSet diff(DesiredState desired, Map<Rule, RuleSpec> wanted, ObservedState observed,
      AppliedRules applied) {
    // Labels (service names) are built only for the rules that change: during endpoint churn a
    // reconcile changes a few of thousands.
    Set<Rule> present = new HashSet<>(observed.rules());

    List<Change> changes = new ArrayList<>();
    List<Rule> adds = new ArrayList<>();
    for (Map.Entry<Rule, RuleSpec> e : wanted.entrySet()) {
      if (!present.contains(e.getKey())) {
        adds.add(e.getKey());
        changes.add(new Change(Change.Op.ADD, Change.Kind.RULE, labelOf(e.getValue()), "rule " + e.getKey()));
      }
    }

    // A rule listed twice is a duplicate (adds go without NLM_F_EXCL, so someone adding the same rule
    // concurrently makes a second copy): each extra copy is deleted (a delete removes one).
    List<Rule> deletes = new ArrayList<>();
    Set<Rule> seen = new HashSet<>();
    for (Rule r : observed.rules()) {
      if (!wanted.containsKey(r) || !seen.add(r)) {
        deletes.add(r);
      }
    }
    deletes.sort(RULE_ORDER);
    List<String> deletedLabels = deletionLabels(deletes, Optional.of(desired), observed, applied);
    for (int i = 0; i < deletes.size(); i++) {
      changes.add(new Change(Change.Op.DELETE, Change.Kind.RULE, deletedLabels.get(i), "rule " + deletes.get(i)));
    }

    // Throw routes: ours are compared by (family, table, destination); the kernel adds what it fills in
    // itself (IPv6's metric 1024), which a delete then names exactly.
    Map<RouteKey, Route> observedRoutes = new HashMap<>();
    observed.routes().forEach(r -> observedRoutes.put(RouteKey.of(r), r));
    Set<RouteKey> wantedRouteKeys = new HashSet<>();
    List<Route> routeAdds = new ArrayList<>();
    for (RouteSpec spec : desired.routes()) {
      Route r = toRoute(spec, desired.ruleProtocol());
      RouteKey key = RouteKey.of(r);
      wantedRouteKeys.add(key);
      if (!observedRoutes.containsKey(key)) {
        routeAdds.add(r);
        changes.add(new Change(Change.Op.ADD, Change.Kind.ROUTE, IN_CLUSTER, "route " + r));
      }
    }
    List<Route> routeDeletes = new ArrayList<>();
    for (Route r : observed.routes()) {
      if (!wantedRouteKeys.contains(RouteKey.of(r))) {
        routeDeletes.add(r);
      }
    }
    routeDeletes.sort(Comparator.comparing((Route r) -> r.family()).thenComparingLong(r -> Integer.toUnsignedLong(r.table()))
        .thenComparing(r -> r.destination().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder())));
    routeDeletes.forEach(r -> changes.add(new Change(Change.Op.DELETE, Change.Kind.ROUTE, IN_CLUSTER, "route " + r)));

    // nft: the table is needed while there is something to SNAT or to steer (the identity NAT that keeps
    // a steered packet's source from the CNI's masquerade), and kept once it exists.
    EgressNftables.NftState nft = observed.nft();
    boolean needTable = !desired.snat().isEmpty() || !desired.steering().routes().isEmpty() || nft.tablePresent();
    boolean ensureBase = needTable && !nft.baseIntact();
    if (ensureBase) {
      changes.add(new Change(Change.Op.ADD, Change.Kind.NFT_BASE, BASE,
          "nft table inet " + EgressNftables.TABLE + " (maps, sets, postrouting chain)"
              + (nft.tablePresent() ? ": repairing" : "")));
    }
    Map<IpPrefix, SnatElement> observedSnat = new HashMap<>();
    nft.snat().forEach(e -> observedSnat.put(e.source(), e));
    Set<SnatElement> addSnat = new HashSet<>();
    Set<IpPrefix> desiredSources = new HashSet<>();
    for (SnatEntry s : desired.snat()) {
      desiredSources.add(s.source());
      SnatElement old = observedSnat.get(s.source());
      if (!ensureBase && old != null && old.target().equals(s.to()) && ServiceComments.matches(s.service(), old.comment())) {
        continue; // as it is: nothing built for it (a reconcile during churn keeps nearly all of them)
      }
      SnatElement element = new SnatElement(s.source(), s.to(), ServiceComments.of(s.service()));
      if (!element.equals(old) || ensureBase) {
        addSnat.add(element);
        if (!element.equals(old)) {
          changes.add(new Change(old == null ? Change.Op.ADD : Change.Op.REPLACE, Change.Kind.SNAT,
              s.service().toString(), "snat " + s.source() + " -> " + s.to()
                  + (old == null ? "" : " (was -> " + old.target() + " for " + old.comment() + ")")));
        }
      }
    }
    Set<SnatElement> deleteSnat = new HashSet<>();
    List<SnatElement> goneSorted = new ArrayList<>();
    for (SnatElement e : nft.snat()) {
      if (!desiredSources.contains(e.source())) {
        goneSorted.add(e);
      }
    }
    goneSorted.sort(Comparator.comparing(SnatElement::source));
    for (SnatElement e : goneSorted) {
      deleteSnat.add(e);
      changes.add(new Change(Change.Op.DELETE, Change.Kind.SNAT, e.comment(),
          "snat " + e.source() + " -> " + e.target()));
    }
    Optional<List<IpPrefix>> inCluster = Optional.empty();
    if (needTable && (ensureBase || !EgressNftables.sameCoverage(nft.inCluster(), desired.inCluster()))) {
      inCluster = Optional.of(desired.inCluster());
      if (!EgressNftables.sameCoverage(nft.inCluster(), desired.inCluster())) {
        changes.add(new Change(Change.Op.REPLACE, Change.Kind.IN_CLUSTER, IN_CLUSTER,
            "nft in_cluster sets = " + desired.inCluster()));
      }
    }
    MarkPlan markPlan = markPlan(desired, observed.reversePath());
    ArrayNode markCommands = MarkNftables.commands(observed.marks(), markPlan);
    describeMarks(observed.marks(), markPlan, changes);
    Map<String, Integer> srcValidMark = markPlan.wanted() ? observed.reversePath().needSrcValidMark() : Map.of();
    new java.util.TreeMap<>(srcValidMark).keySet().forEach(dev -> changes.add(new Change(Change.Op.ADD,
        Change.Kind.SYSCTL, BASE, "sysctl net.ipv4.conf." + dev + ".src_valid_mark=1 (strict rp_filter on an uplink"
            + " of a marked network: the reverse-path check must see the mark)")));
    // Reorder the descriptions like the execution: route adds, rule adds, nft, rule deletes, route deletes.
    List<Change> ordered = new ArrayList<>();
    changes.stream().filter(c -> c.kind() == Change.Kind.ROUTE && c.op() == Change.Op.ADD).forEach(ordered::add);
    changes.stream().filter(c -> c.kind() == Change.Kind.RULE && c.op() == Change.Op.ADD).forEach(ordered::add);
    changes.stream().filter(c -> c.kind() != Change.Kind.RULE && c.kind() != Change.Kind.ROUTE).forEach(ordered::add);
    changes.stream().filter(c -> c.kind() == Change.Kind.RULE && c.op() == Change.Op.DELETE).forEach(ordered::add);
    changes.stream().filter(c -> c.kind() == Change.Kind.ROUTE && c.op() == Change.Op.DELETE).forEach(ordered::add);
    return new ChangeSet(adds, new NftChange(addSnat, deleteSnat, inCluster), ensureBase, markCommands, deletes,
        routeAdds, routeDeletes, ordered, srcValidMark, SteeringChanges.none(),
        markCommands.isEmpty() ? Optional.empty() : Optional.of(MarkNftables.outcome(observed.marks(), markPlan)));
  }

  /**
   * What each rule in {@code deletes} belonged to, in order. A deleted rule is named by what it was applied for:
   * the kernel keeps no name for a ClusterIP's or a steered endpoint's rule (no SNAT element), and a deleted
   * service is no longer in the plan. Rules this dataplane did not apply (a restarted agent) are named by the plan
   * ({@code desired}, empty for a cleanup) and the nft comments, else {@code (unknown)}.
   */
  static List<String> deletionLabels(List<Rule> deletes, Optional<DesiredState> desired, ObservedState observed,
      AppliedRules applied) {
    List<Rule> unapplied = deletes.stream().filter(r -> applied.specOf(r).isEmpty()).toList();
    Map<IpPrefix, String> serviceBySource = serviceBySource(desired, observed, unapplied);
    List<String> out = new ArrayList<>(deletes.size());
    for (Rule r : deletes) {
      out.add(applied.specOf(r).map(Differ::labelOf).orElseGet(() -> r.source()
          .map(s -> serviceBySource.getOrDefault(s, UNKNOWN))
          .orElse(r.destination().isPresent() ? IN_CLUSTER
              : r.fwmark().isPresent() ? "(network " + Integer.toUnsignedString(r.table()) + ")" : UNKNOWN)));
    }
    return out;
  }

  /** What a plan rule belongs to: its service (an endpoint's or a ClusterIP's), its network (mark mode), else in-cluster. */
  private static String labelOf(RuleSpec spec) {
    return spec.service().map(Object::toString)
        .orElse(spec.fwmark().isPresent() && spec.to().isEmpty() ? "(network " + spec.table().name() + ")" : IN_CLUSTER);
  }

  private static MarkPlan markPlan(DesiredState desired, ReversePath.State reversePath) {
    if (desired.ruleMode() != RuleMode.MARK || desired.networkMarks().isEmpty()) {
      return MarkPlan.none();
    }
    Set<MarkElement> elements = new HashSet<>();
    desired.marks().forEach(m -> elements.add(new MarkElement(m.source(), m.table(), ServiceComments.of(m.service()))));
    return new MarkPlan(desired.markMask(), desired.networkMarks(), elements, reversePath.strictUplinks());
  }

  private static void describeMarks(MarkState observed, MarkPlan desired, List<Change> changes) {
    Map<IpPrefix, MarkElement> wanted = new HashMap<>();
    desired.elements().forEach(e -> wanted.put(e.source(), e));
    for (Map.Entry<Long, Long> net : new java.util.TreeMap<>(desired.networkMarks()).entrySet()) {
      if (!net.getValue().equals(observed.networkChains().get(net.getKey()))) {
        changes.add(new Change(Change.Op.ADD, Change.Kind.MARK, BASE, "nft chain " + MarkNftables.chainOf(net.getKey())
            + ": mark 0x" + Long.toHexString(net.getValue()) + " for table " + net.getKey()));
      }
    }
    List<MarkElement> gone = new ArrayList<>(observed.elements().values());
    gone.sort(Comparator.comparing(MarkElement::source));
    for (MarkElement e : gone) {
      if (!e.equals(wanted.get(e.source()))) {
        changes.add(new Change(Change.Op.DELETE, Change.Kind.MARK, e.comment(), "mark " + e.source() + " -> table " + e.table()));
      }
    }
    List<MarkElement> fresh = new ArrayList<>(desired.elements());
    fresh.sort(Comparator.comparing(MarkElement::source));
    for (MarkElement e : fresh) {
      if (!e.equals(observed.elements().get(e.source()))) {
        changes.add(new Change(Change.Op.ADD, Change.Kind.MARK, e.comment(), "mark " + e.source() + " -> table " + e.table()));
      }
    }
    Set<String> haveReply = observed.replyIfaces().orElse(Set.of());
    if (!haveReply.equals(desired.replyIfaces())) {
      changes.add(new Change(desired.replyIfaces().isEmpty() ? Change.Op.DELETE : Change.Op.REPLACE, Change.Kind.MARK,
          BASE, "nft set " + MarkNftables.REPLY_IFACES + " = " + new java.util.TreeSet<>(desired.replyIfaces())
              + " (uplinks with strict rp_filter: their packets to marked endpoints get the mark)"));
    }
    if (!desired.wanted() && observed.anyPresent()) {
      changes.add(new Change(Change.Op.DELETE, Change.Kind.MARK, BASE, "nft mark maps and chains (not in mark mode)"));
    }
  }

  /** The netlink route a plan throw route becomes: {@code throw <to> table <id> proto <ours>}. */
  public static Route toRoute(RouteSpec spec, int protocol) {
    if (spec.table().id().isEmpty()) {
      throw new IllegalStateException("route " + spec + " has an unresolved table; plans for a node resolve every network");
    }
    return Route.of(spec.family(), (int) spec.table().id().getAsLong(), RouteType.THROW, Optional.of(spec.to()))
        .protocol(protocol);
  }

  /** What identifies one of our throw routes: two with the same key cannot both exist. */
  private record RouteKey(io.egressservice.ip.IpFamily family, int table, Optional<IpPrefix> destination) {
    static RouteKey of(Route r) {
      return new RouteKey(r.family(), r.table(), r.destination());
    }
  }

  /** The netlink rule a plan rule becomes; tables must be resolved (they always are on a node). */
  public static Rule toRule(RuleSpec spec, int protocol, long markMask) {
    if (spec.table().id().isEmpty()) {
      throw new IllegalStateException("rule " + spec + " has an unresolved table; plans for a node resolve every network");
    }
    Rule r = Rule.lookup(spec.family(), spec.priority(), (int) spec.table().id().getAsLong()).protocol(protocol);
    if (spec.fwmark().isPresent()) {
      r = r.fwmark(spec.fwmark().getAsLong(), markMask);
    }
    if (spec.from().isPresent()) {
      r = r.from(spec.from().get());
    }
    if (spec.to().isPresent()) {
      r = r.to(spec.to().get());
    }
    if (spec.sourcePort().isPresent()) {
      r = r.sourcePort(spec.sourcePort().getAsInt());
    }
    return r;
  }

  /**
   * Which service each deleted rule's source belongs to: the plan first, then the nft comments. Only
   * for those sources: during churn a reconcile deletes a rule or two among thousands.
   */
  private static Map<IpPrefix, String> serviceBySource(Optional<DesiredState> plan, ObservedState observed,
      List<Rule> deleted) {
    Set<IpPrefix> sources = new HashSet<>();
    deleted.forEach(r -> r.source().ifPresent(sources::add));
    if (sources.isEmpty()) {
      return Map.of();
    }
    Map<IpPrefix, String> out = new HashMap<>();
    observed.nft().snat().stream().filter(e -> sources.contains(e.source())).forEach(e -> out.put(e.source(), e.comment()));
    observed.marks().elements().values().stream().filter(e -> sources.contains(e.source()))
        .forEach(e -> out.put(e.source(), e.comment()));
    if (plan.isEmpty()) {
      return out;
    }
    DesiredState desired = plan.get();
    desired.marks().stream().filter(m -> sources.contains(m.source()))
        .forEach(m -> out.put(m.source(), m.service().toString()));
    for (RuleSpec r : desired.rules()) {
      if (r.from().isPresent() && r.service().isPresent() && sources.contains(r.from().get())) {
        out.put(r.from().get(), r.service().get().toString());
      }
    }
    return out;
  }
}

package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * A configured service whose network's table has no route of a family the service uses (its endpoints' or its
 * LoadBalancer IPs' family) on this node, by the kernel's {@link TableRoutes}: the rules send that family's traffic
 * into the table, finds nothing there and falls through to the next rule (usually the main table), so it leaves by
 * the node's own routes, silently. Nothing the plan can repair; said on each node whose rules use the table.
 */
public final class NoRouteWarning {
  private static final String V4 = "no " + NodeFacts.familyName(IpFamily.V4) + " route in table ";
  private static final String V6 = "no " + NodeFacts.familyName(IpFamily.V6) + " route in table ";

  private NoRouteWarning() {}

  /** Whether {@code warning} (of {@link ServiceOutcome#warnings()}) is one of these. */
  public static boolean is(String warning) {
    return warning.startsWith(V4) || warning.startsWith(V6);
  }

  /** The warnings for one service's rules on this node; empty when the table's routes were not read. */
  static List<String> of(EgressServiceInfo es, ServiceEvaluation ev, List<RuleSpec> rules,
      NetworkResolution networks) {
    if (es.network().isEmpty()) {
      return List.of();
    }
    Optional<TableRef> table = NetworkTables.resolve(es.network(), networks).table().filter(TableRef::resolved);
    if (table.isEmpty()) {
      return List.of();
    }
    long id = table.get().id().getAsLong();
    Set<IpFamily> used = EnumSet.noneOf(IpFamily.class);
    ev.endpoints().forEach(c -> used.add(c.address().family()));
    used.addAll(ev.lbIps().keySet());
    Set<IpFamily> routedHere = EnumSet.noneOf(IpFamily.class);
    rules.stream().filter(r -> r.table().id().equals(table.get().id())).forEach(r -> routedHere.add(r.family()));
    used.retainAll(routedHere);
    List<String> out = new ArrayList<>();
    for (IpFamily f : used) {
      if (networks.routes().lacks(id, f)) {
        String family = NodeFacts.familyName(f);
        String named = NetworkNames.isTableNumber(es.network()) ? ""
            : " (network " + TenantText.quoted(es.network()) + ")";
        out.add((f == IpFamily.V4 ? V4 : V6) + id + named + " on this node: this service's " + family
            + " traffic that its rules send there falls through to the next rule (usually the main table) and leaves"
            + " by the node's own routes; add an " + family + " route (e.g. a default route) to table " + id);
      }
    }
    return out;
  }
}

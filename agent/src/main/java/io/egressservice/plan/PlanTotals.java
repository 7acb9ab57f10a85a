package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import java.util.EnumMap;
import java.util.Map;

/**
 * How much a plan holds, per family where it matters: what the agent's gauges show. An incremental plan keeps
 * them up to date as services are re-planned, so nobody counts thousands of rules per reconcile.
 */
public record PlanTotals(Map<IpFamily, Long> rules, Map<IpFamily, Long> snatEntries, Map<IpFamily, Long> routes,
    Map<IpFamily, Long> steeredEndpoints, long configuredServices, long notConfiguredServices,
    long skippedEndpoints, long remoteEndpoints) {
  public PlanTotals {
    rules = nonZero(rules);
    snatEntries = nonZero(snatEntries);
    routes = nonZero(routes);
    steeredEndpoints = nonZero(steeredEndpoints);
  }

  private static Map<IpFamily, Long> nonZero(Map<IpFamily, Long> counts) {
    Map<IpFamily, Long> out = new EnumMap<>(IpFamily.class);
    counts.forEach((f, n) -> {
      if (n != 0) {
        out.put(f, n);
      }
    });
    return Map.copyOf(out);
  }

  /** Counted over the whole plan. */
  public static PlanTotals of(DesiredState d) {
    Counter c = new Counter();
    d.rules().forEach(r -> c.rules.merge(r.family(), 1L, Long::sum));
    d.snat().forEach(e -> c.snat.merge(e.family(), 1L, Long::sum));
    d.steering().endpoints().forEach(e -> c.steered.merge(e.family(), 1L, Long::sum));
    d.services().forEach(o -> c.outcome(o, 1));
    return c.totals(d.routes());
  }

  /** Running counts, added to and taken from as services' parts come and go. */
  static final class Counter {
    final Map<IpFamily, Long> rules = new EnumMap<>(IpFamily.class);
    final Map<IpFamily, Long> snat = new EnumMap<>(IpFamily.class);
    final Map<IpFamily, Long> steered = new EnumMap<>(IpFamily.class);
    long configured;
    long notConfigured;
    long skipped;
    long remote;

    void outcome(ServiceOutcome o, int sign) {
      if (o.configured()) {
        configured += sign;
      } else {
        notConfigured += sign;
      }
      skipped += sign * (long) o.skippedEndpoints().size();
      remote += sign * (long) o.remoteEndpoints().size();
    }

    void service(ServicePlan p, int sign) {
      p.rules().forEach(r -> rules.merge(r.family(), (long) sign, Long::sum));
      p.snat().forEach(e -> snat.merge(e.family(), (long) sign, Long::sum));
      outcome(p.outcome(), sign);
    }

    void steered(ServicePlan p, int sign) {
      p.steeredFinal().forEach(e -> steered.merge(e.family(), (long) sign, Long::sum));
    }

    PlanTotals totals(java.util.List<RouteSpec> routeList) {
      Map<IpFamily, Long> routes = new EnumMap<>(IpFamily.class);
      routeList.forEach(r -> routes.merge(r.family(), 1L, Long::sum));
      return new PlanTotals(rules, snat, routes, steered, configured, notConfigured, skipped, remote);
    }

    PlanTotals totals(java.util.List<RouteSpec> routeList, java.util.List<RuleSpec> extraRules) {
      Map<IpFamily, Long> all = new EnumMap<>(rules);
      extraRules.forEach(r -> all.merge(r.family(), 1L, Long::sum));
      Map<IpFamily, Long> routes = new EnumMap<>(IpFamily.class);
      routeList.forEach(r -> routes.merge(r.family(), 1L, Long::sum));
      return new PlanTotals(all, snat, routes, steered, configured, notConfigured, skipped, remote);
    }
  }
}

package io.egressservice.controller;

import io.egressservice.dataplane.Differ;
import io.egressservice.netlink.ChangeEvent;
import io.egressservice.netlink.ChangeKind;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Rule;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.PlanDelta;
import io.egressservice.plan.RouteSpec;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.SteeringPlan;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;

/**
 * Tells drift from the echo of the agent's own changes in the kernel's notifications. A rule change at our
 * priorities, or a throw route with our protocol, that the last plan did not ask for (one of ours deleted, a stray
 * one added) means drift; the echo of our own changes does not, so it triggers nothing. An address added to or
 * removed from the node, a VRF, or the steering device deleted by someone else, change what the plan or the kernel
 * should hold too. Notifications arrive on the subscription's thread while the worker plans: the expectations are
 * replaced or updated in place, never half-built.
 */
final class DriftFilter {
  private final int priority;
  private final int protocol;
  /**
   * The rules of the last plan, each with how many services want it: kernel notifications about them are the echo
   * of our own changes. A full plan replaces the map; an incremental one updates it for the changed services.
   */
  private volatile Map<Rule, Integer> expectedRules = new ConcurrentHashMap<>();
  /** The throw routes of the last plan, as (family, table, destination): the same for route notifications. */
  private volatile Set<String> expectedRoutes = Set.of();
  private List<RouteSpec> lastRoutes = List.of();

  DriftFilter(PlanConfig config) {
    this.priority = config.priority();
    this.protocol = config.ruleProtocol();
  }

  /** Whether the notification calls for a reconcile. */
  boolean relevant(ChangeEvent e) {
    return e.rule().map(r -> isDrift(e.kind(), r)).orElse(false)
        || e.route().map(r -> isDrift(e.kind(), r)).orElse(false)
        || e.address().isPresent()
        || e.link().flatMap(l -> l.kind()).filter("vrf"::equals).isPresent()
        // the steering device removed by someone else: re-create it now, not at the next resync
        || (e.kind() == ChangeKind.DELETED
            && e.link().filter(l -> l.name().equals(SteeringPlan.DEVICE)).isPresent());
  }

  private boolean isDrift(ChangeKind kind, Rule r) {
    if (r.protocol() != protocol || (r.priority() != priority && r.priority() != priority - 1)) {
      return false;
    }
    boolean expected = expectedRules.containsKey(r);
    return kind == ChangeKind.DELETED ? expected : !expected;
  }

  private boolean isDrift(ChangeKind kind, Route r) {
    if (r.protocol() != protocol || r.type() != RouteType.THROW) {
      return false;
    }
    boolean expected = expectedRoutes.contains(routeKey(r));
    return kind == ChangeKind.DELETED ? expected : !expected;
  }

  private static String routeKey(Route r) {
    return r.family() + " " + Integer.toUnsignedString(r.table()) + " " + r.destination().map(Object::toString).orElse("default");
  }

  /** A full plan: its rules are what the kernel should hold. */
  void expectRules(DesiredState desired) {
    Map<Rule, Integer> counts = new ConcurrentHashMap<>(Math.max(16, desired.rules().size() * 2));
    for (RuleSpec r : desired.rules()) {
      counts.merge(Differ.toRule(r, desired.ruleProtocol(), desired.markMask()), 1, Integer::sum);
    }
    expectedRules = counts;
  }

  /** An incremental plan: the changed services' rules, added first, so a rule that stays is never absent. */
  void expectRuleChanges(PlanDelta delta) {
    DesiredState d = delta.desired();
    Map<Rule, Integer> counts = expectedRules;
    for (RuleSpec r : delta.rulesAdded()) {
      counts.merge(Differ.toRule(r, d.ruleProtocol(), d.markMask()), 1, Integer::sum);
    }
    for (RuleSpec r : delta.rulesRemoved()) {
      counts.computeIfPresent(Differ.toRule(r, d.ruleProtocol(), d.markMask()), (k, n) -> n == 1 ? null : n - 1);
    }
  }

  /** Any plan: its throw routes (recomputed only when the plan's route list is a new one). */
  void expectRoutes(DesiredState desired) {
    if (desired.routes() != lastRoutes) {
      expectedRoutes = desired.routes().stream()
          .map(spec -> routeKey(Differ.toRoute(spec, desired.ruleProtocol())))
          .collect(Collectors.toUnmodifiableSet());
      lastRoutes = desired.routes();
    }
  }
}

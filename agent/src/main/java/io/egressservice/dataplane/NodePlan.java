package io.egressservice.dataplane;

import io.egressservice.netlink.Rule;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.RuleSpec;
import java.util.Map;

/**
 * A node's plan and the observation of the owned kernel state it was made against.
 *
 * @param wantedRules the plan's rules as netlink rules ({@link Differ#wantedRules}), built once for the
 *     diff and for the agent's drift filter
 * @param observeNanos how long that observation took (counted as kernel time by the reconcile)
 * @param steeringMtu the MTU the steering device should have (0 when no device is wanted)
 */
public record NodePlan(DesiredState desired, Map<Rule, RuleSpec> wantedRules, ObservedState observed,
    long observeNanos, int steeringMtu) {
  public NodePlan {
    wantedRules = java.util.Collections.unmodifiableMap(wantedRules);
  }

  public NodePlan(DesiredState desired, Map<Rule, RuleSpec> wantedRules, ObservedState observed, long observeNanos) {
    this(desired, wantedRules, observed, observeNanos, 0);
  }
}

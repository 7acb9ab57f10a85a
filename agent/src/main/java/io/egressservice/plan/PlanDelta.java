package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A plan and how it differs from the previous one of the same {@link IncrementalPlanner}.
 *
 * @param changedServices the EgressServices re-planned (or gone) since the previous plan: only their rules, SNAT and
 *     mark entries, held and steered endpoints can differ; empty after a full plan (then anything may differ)
 * @param full whether every service was planned (first plan, a node-wide input changed, or a change coupled to
 *     too much to follow)
 * @param rulesRemoved not after a full plan: rules of the previous plan that are not in this one (each once per
 *     service that had it)
 * @param rulesAdded likewise, rules of this plan that were not in the previous one
 * @param outcomes the outcomes of the changed services that still exist (a changed service without one is gone)
 * @param servicesPlanned how many services were planned to make it
 * @param totals the counts the gauges show, kept up to date without counting the plan
 */
public record PlanDelta(DesiredState desired, Set<ObjectRef> changedServices, boolean full,
    List<RuleSpec> rulesRemoved, List<RuleSpec> rulesAdded, Map<ObjectRef, ServiceOutcome> outcomes,
    int servicesPlanned, PlanTotals totals) {
  public PlanDelta {
    changedServices = Set.copyOf(changedServices);
    rulesRemoved = List.copyOf(rulesRemoved);
    rulesAdded = List.copyOf(rulesAdded);
    outcomes = Map.copyOf(outcomes);
  }
}

package io.egressservice.dataplane;

import io.egressservice.plan.DesiredState;

/**
 * A node's plan and the observation of the owned kernel state it was made against.
 *
 * @param observeNanos how long that observation took (counted as kernel time by the reconcile)
 */
public record NodePlan(DesiredState desired, ObservedState observed, long observeNanos) {}

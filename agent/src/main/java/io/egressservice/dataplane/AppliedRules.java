package io.egressservice.dataplane;

import io.egressservice.netlink.Rule;
import io.egressservice.plan.RuleSpec;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;

/**
 * The rules this dataplane last applied, each with the rule of the plan it came from, so that the reconcile
 * deleting one can name what it belonged to. The kernel cannot: a ClusterIP's rule or a steered endpoint's has no
 * SNAT element whose comment names the service, and once the service is deleted the plan no longer names it
 * either, which left such deletions labelled {@code (unknown)}.
 *
 * <p>The last full reconcile's rules are kept by reference (no copy of thousands of rules per reconcile); the fast
 * path's additions since go in a small overlay, which the next full reconcile drops. A rule the fast path removed
 * stays known: a later deletion of a leftover copy is still named right. Confined to the caller's thread, like
 * the {@link Dataplane} that owns it.
 */
final class AppliedRules {
  private Map<Rule, RuleSpec> base = Map.of();
  private final Map<Rule, RuleSpec> overlay = new HashMap<>();

  /** Nothing applied yet (a fresh agent): deletions fall back to what the kernel's nft comments say. */
  static AppliedRules none() {
    return new AppliedRules();
  }

  /** Of a single plan's rules (the fast path's slice before the change). */
  static AppliedRules of(Map<Rule, RuleSpec> rules) {
    AppliedRules out = new AppliedRules();
    out.base = rules;
    return out;
  }

  /** The plan rule {@code rule} was applied for, if this dataplane applied it. */
  Optional<RuleSpec> specOf(Rule rule) {
    RuleSpec spec = overlay.get(rule);
    return Optional.ofNullable(spec != null ? spec : base.get(rule));
  }

  /**
   * After a full reconcile: when it succeeded, the kernel holds exactly {@code wanted}; when it failed, it may
   * still hold rules of earlier plans, so those stay known too.
   */
  void afterFullReconcile(Map<Rule, RuleSpec> wanted, boolean succeeded) {
    if (succeeded) {
      base = wanted;
      overlay.clear();
    } else {
      overlay.putAll(wanted);
    }
  }

  /** After the fast path added (or kept) the rules {@code now} of the changed services. */
  void afterFastPath(Map<Rule, RuleSpec> now) {
    overlay.putAll(now);
  }
}

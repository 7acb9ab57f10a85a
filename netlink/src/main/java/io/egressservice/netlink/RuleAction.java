package io.egressservice.netlink;

/** What a rule does when it matches ({@code FR_ACT_*} in {@code <linux/fib_rules.h>}). */
public enum RuleAction {
  /** {@code lookup TABLE}: FR_ACT_TO_TBL. */
  TO_TABLE,
  /** {@code goto PRIORITY}: FR_ACT_GOTO. */
  GOTO,
  /** {@code nop}: FR_ACT_NOP. */
  NOP,
  /** {@code blackhole}: FR_ACT_BLACKHOLE. */
  BLACKHOLE,
  /** {@code unreachable}: FR_ACT_UNREACHABLE. */
  UNREACHABLE,
  /** {@code prohibit}: FR_ACT_PROHIBIT. */
  PROHIBIT;

  /** The keyword {@code ip rule} prints for a non-table action. */
  String keyword() {
    return name().toLowerCase(java.util.Locale.ROOT);
  }
}

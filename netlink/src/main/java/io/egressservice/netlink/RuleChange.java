package io.egressservice.netlink;

import java.util.Objects;

/** One step of a {@link RtNetlink#apply batch}: add or delete a rule. */
public record RuleChange(Op op, Rule rule) {
  public enum Op {
    ADD,
    DELETE
  }

  public RuleChange {
    Objects.requireNonNull(op, "op");
    Objects.requireNonNull(rule, "rule");
  }

  public static RuleChange add(Rule rule) {
    return new RuleChange(Op.ADD, rule);
  }

  public static RuleChange delete(Rule rule) {
    return new RuleChange(Op.DELETE, rule);
  }

  @Override
  public String toString() {
    return (op == Op.ADD ? "add" : "del") + " ip rule '" + rule + "'";
  }
}

package io.egressservice.model;

/**
 * How opted-in sources reach their network's table.
 *
 * <ul>
 *   <li>{@link #SOURCE}: one {@code ip rule from <source> lookup <table>} per source, as OVN-Kubernetes
 *       does. The kernel walks these rules for every routed packet on the node, opted in or not.
 *   <li>{@link #MARK}: nftables marks the opted-in sources (one map lookup per packet) and one
 *       {@code ip rule fwmark <mark>/<mask> lookup <table>} per network routes them.
 * </ul>
 */
public enum RuleMode {
  SOURCE("source"),
  MARK("mark");

  private final String flag;

  RuleMode(String flag) {
    this.flag = flag;
  }

  public String flag() {
    return flag;
  }

  public static RuleMode fromFlag(String flag) {
    for (RuleMode m : values()) {
      if (m.flag.equals(flag)) {
        return m;
      }
    }
    throw new IllegalArgumentException("--rule-mode must be source or mark, not '" + flag + "'");
  }
}

package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;

/**
 * One desired {@code throw <to> table <table>} route: an in-cluster destination handed back from a
 * service's table to the rules that follow (DESIGN.md section 1). Only sources that opted in ever look
 * up a service table, so the exemption never touches anyone else's traffic.
 */
public record RouteSpec(IpFamily family, TableRef table, IpPrefix to) {
  public RouteSpec {
    if (to.family() != family) {
      throw new IllegalArgumentException("throw route to " + to + " is not " + family);
    }
  }

  /** (family, table id or name, destination): the order of the JSON output. */
  public static final Comparator<RouteSpec> ORDER = (a, b) -> {
    int c = a.family.compareTo(b.family);
    if (c != 0) {
      return c;
    }
    c = Long.compare(a.table.id().orElse(Long.MAX_VALUE), b.table.id().orElse(Long.MAX_VALUE));
    if (c != 0) {
      return c;
    }
    c = a.table.name().compareTo(b.table.name());
    return c != 0 ? c : a.to.compareTo(b.to);
  };

  /** What {@code ip route add} takes: {@code throw 10.128.0.0/14 table 100}. */
  @Override
  public String toString() {
    return "throw " + to.cidrText() + " table " + table.name();
  }
}

package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;

/**
 * The default route of one steering table and family: over the agent's device, encapsulated to the
 * host node's InternalIP ({@code default dev egress-vx encap ip id 1 dst <hostAddress> table <table>}).
 */
public record SteerRoute(IpFamily family, long table, String host, IpPrefix hostAddress) {
  public static final Comparator<SteerRoute> ORDER = (a, b) -> {
    int c = Long.compare(a.table, b.table);
    return c != 0 ? c : a.family.compareTo(b.family);
  };
}

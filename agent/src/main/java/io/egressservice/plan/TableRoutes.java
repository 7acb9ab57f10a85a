package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * Which address families the networks' routing tables have a route of, as read from this node's kernel: the fact
 * behind the warning that a service's traffic of a family falls through its network's table to the next rule
 * (usually the main table). A route counts when it ends the lookup for some destination out of the node: unicast
 * (a default or any prefix, connected ones included), blackhole, unreachable or prohibit; not a throw route (the
 * agent's own in-cluster exemptions are throw routes), not a local, broadcast or multicast route, not an IPv6
 * link-local prefix (the kernel puts those and the local routes in a VRF's table by itself). Any such route, not
 * only a default one: a table that routes some destinations only may be meant so, and {@code explain} names the
 * fall-through per packet.
 *
 * @param families table id to the families it has such a route of; a table that is absent was not read (offline,
 *     or not a network in use), which is never a reason to warn
 */
public record TableRoutes(Map<Long, Set<IpFamily>> families) {
  public static final TableRoutes UNKNOWN = new TableRoutes(Map.of());

  public TableRoutes {
    Map<Long, Set<IpFamily>> copy = new HashMap<>();
    families.forEach((table, fs) -> copy.put(table, fs.isEmpty() ? Set.of() : Set.copyOf(EnumSet.copyOf(fs))));
    families = Map.copyOf(copy);
  }

  /** Whether {@code table} was read and has no route of {@code family}. */
  public boolean lacks(long table, IpFamily family) {
    Set<IpFamily> routed = families.get(table);
    return routed != null && !routed.contains(family);
  }
}

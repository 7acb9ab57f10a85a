package io.egressservice.dataplane;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.Routing;
import io.egressservice.plan.TableRoutes;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;

/**
 * Reads {@link TableRoutes} for the networks' tables: one dump per table and family, which the kernel filters to
 * the table (Linux 4.20+, strict checking, which the agent's kernel check requires; older kernels would send every
 * table and the library filters), so the cost follows the size of the tables in use, never per service or packet.
 * A full read (each full reconcile: startup, resync, drift) reads every table; between full reads the last answer
 * is kept and only a table not read yet is dumped. Whether a route notification may end a warning is answered from
 * the last read, so an admin's fix shows without waiting for the resync (a route removed is seen at the next full
 * read: a busy table's deletions must not each cost a reconcile).
 */
final class TableRouteReader {
  private static final IpPrefix LINK_LOCAL_V6 = IpPrefix.parse("fe80::/10");

  private final Routing netlink;
  private final String where;
  /** Table id to the families it had a route of at the last read; written by the reconcile thread only. */
  private volatile Map<Long, Set<IpFamily>> known = Map.of();

  TableRouteReader(Routing netlink, String where) {
    this.netlink = netlink;
    this.where = where;
  }

  /** Reads every table of {@code tables} now. */
  TableRoutes read(Set<Long> tables) {
    Map<Long, Set<IpFamily>> now = new HashMap<>();
    for (long t : tables) {
      now.put(t, familiesOf(t));
    }
    known = Map.copyOf(now);
    return new TableRoutes(now);
  }

  /** The last read for {@code tables}, reading only those not read before. */
  TableRoutes current(Set<Long> tables) {
    Map<Long, Set<IpFamily>> last = known;
    if (last.keySet().containsAll(tables)) {
      Map<Long, Set<IpFamily>> out = new HashMap<>();
      tables.forEach(t -> out.put(t, last.get(t)));
      return new TableRoutes(out);
    }
    Map<Long, Set<IpFamily>> now = new HashMap<>(last);
    Map<Long, Set<IpFamily>> out = new HashMap<>();
    for (long t : tables) {
      Set<IpFamily> fs = last.containsKey(t) ? last.get(t) : familiesOf(t);
      now.put(t, fs);
      out.put(t, fs);
    }
    known = Map.copyOf(now);
    return new TableRoutes(out);
  }

  /** A route added to a table read last time without a route of its family: a warning may end. */
  boolean awaited(Route added) {
    Set<IpFamily> fs = known.get(Integer.toUnsignedLong(added.table()));
    return fs != null && !fs.contains(added.family()) && counts(added);
  }

  private Set<IpFamily> familiesOf(long table) {
    Set<IpFamily> out = EnumSet.noneOf(IpFamily.class);
    for (IpFamily f : IpFamily.values()) {
      try {
        if (netlink.listTableRoutes(f, (int) table).stream().anyMatch(TableRouteReader::counts)) {
          out.add(f);
        }
      } catch (NetlinkException e) {
        throw new DataplaneException("cannot list the routes of table " + table + " in " + where + ": "
            + e.getMessage(), e);
      }
    }
    return Set.copyOf(out);
  }

  /** A route that ends the lookup for some destination out of the node ({@link TableRoutes} says which). */
  static boolean counts(Route r) {
    boolean ends = switch (r.type()) {
      case UNICAST, BLACKHOLE, UNREACHABLE, PROHIBIT -> true;
      case LOCAL, BROADCAST, THROW, OTHER -> false;
    };
    return ends && r.destination().filter(d -> d.family() == IpFamily.V6 && LINK_LOCAL_V6.contains(d)).isEmpty();
  }
}

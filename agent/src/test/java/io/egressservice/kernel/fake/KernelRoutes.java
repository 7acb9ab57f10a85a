package io.egressservice.kernel.fake;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Address;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteType;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/** How the kernel keys, matches, orders and derives routes, for {@link FakeRouting}. */
final class KernelRoutes {
  static final int RT_TABLE_MAIN = 254;
  static final int RT_TABLE_LOCAL = 255;
  static final int RTPROT_KERNEL = 2;
  /** The loopback device's ifindex. */
  static final int LO = 1;

  private KernelRoutes() {}

  /** The order the fake lists routes in (the kernel's dump order is not modelled). */
  static final Comparator<Route> ORDER = Comparator.<Route>comparingLong(r -> Integer.toUnsignedLong(r.table()))
      .thenComparing(r -> r.destination().orElse(IpPrefix.of(new byte[r.family().byteLength()], 0)))
      .thenComparingLong(r -> Integer.toUnsignedLong(r.metric().orElse(0)));

  /**
   * The routes an address brings while its device is up: its local route; below a host prefix the subnet's route
   * ({@code proto kernel}; on {@code lo} a local route for the whole subnet), and for IPv4 below /31 the subnet's
   * broadcast route.
   */
  static List<Route> connected(Address a) {
    List<Route> out = new ArrayList<>();
    boolean v6 = a.family() == IpFamily.V6;
    out.add(new Route(a.family(), RT_TABLE_LOCAL, RouteType.LOCAL, Optional.of(a.local()), Optional.empty(),
        OptionalInt.of(a.index()), RTPROT_KERNEL, v6 ? OptionalInt.of(0) : OptionalInt.empty()));
    if (a.prefixLength() < a.family().bits()) {
      out.add(a.index() == LO && !v6
          ? new Route(a.family(), RT_TABLE_LOCAL, RouteType.LOCAL, Optional.of(a.subnet()), Optional.empty(),
              OptionalInt.of(a.index()), RTPROT_KERNEL, OptionalInt.empty())
          : new Route(a.family(), RT_TABLE_MAIN, RouteType.UNICAST, Optional.of(a.subnet()), Optional.empty(),
              OptionalInt.of(a.index()), RTPROT_KERNEL, v6 ? OptionalInt.of(256) : OptionalInt.empty()));
    }
    if (!v6 && a.prefixLength() < 31) {
      out.add(new Route(a.family(), RT_TABLE_LOCAL, RouteType.BROADCAST, Optional.of(lastAddress(a.subnet())),
          Optional.empty(), OptionalInt.of(a.index()), RTPROT_KERNEL, OptionalInt.empty()));
    }
    return out;
  }

  private static IpPrefix lastAddress(IpPrefix p) {
    byte[] raw = p.lastAddress().toByteArray();
    byte[] b = new byte[p.family().byteLength()];
    int n = Math.min(raw.length, b.length);
    System.arraycopy(raw, raw.length - n, b, b.length - n, n);
    return IpPrefix.host(b);
  }

  /** The kernel's identity of a route in a table: family, table, destination, metric. */
  static boolean sameKey(Route a, Route b) {
    return a.family() == b.family() && a.table() == b.table() && a.destination().equals(b.destination())
        && a.metric().orElse(defaultMetric(a)) == b.metric().orElse(defaultMetric(b));
  }

  static int defaultMetric(Route r) {
    return r.family() == IpFamily.V6 ? 1024 : 0;
  }

  /** As {@code ip route del} matches: destination and table exactly; type, protocol, device, gateway, metric when given. */
  static boolean deleteMatches(Route request, Route r) {
    return r.family() == request.family() && r.table() == request.table()
        && r.destination().equals(request.destination()) && r.type() == request.type()
        && (request.protocol() == 0 || r.protocol() == request.protocol())
        && (request.oif().isEmpty() || r.oif().equals(request.oif()))
        && (request.gateway().isEmpty() || r.gateway().equals(request.gateway()))
        && (request.metric().isEmpty() || r.metric().orElse(defaultMetric(r)) == request.metric().getAsInt());
  }

}

package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A route in one table, as {@code ip route show table N} lists it ({@code struct rtmsg} plus
 * {@code RTA_*}). An empty destination is the default route (0.0.0.0/0 or ::/0, normalised to
 * empty); {@code oif} is the output ifindex; {@code metric} is RTA_PRIORITY (the kernel reports
 * 1024 for IPv6 routes added without one); {@code encap} is a lightweight-tunnel encapsulation
 * ({@link RouteEncap}). Multipath routes are not modelled.
 */
public record Route(
    IpFamily family,
    int table,
    RouteType type,
    Optional<IpPrefix> destination,
    Optional<IpPrefix> gateway,
    OptionalInt oif,
    int protocol,
    OptionalInt metric,
    Optional<RouteEncap> encap) {

  /** A route without encapsulation. */
  public Route(IpFamily family, int table, RouteType type, Optional<IpPrefix> destination, Optional<IpPrefix> gateway,
      OptionalInt oif, int protocol, OptionalInt metric) {
    this(family, table, type, destination, gateway, oif, protocol, metric, Optional.empty());
  }

  public Route {
    Objects.requireNonNull(family, "family");
    Objects.requireNonNull(type, "type");
    Objects.requireNonNull(destination, "destination");
    Objects.requireNonNull(gateway, "gateway");
    Objects.requireNonNull(oif, "oif");
    Objects.requireNonNull(metric, "metric");
    Objects.requireNonNull(encap, "encap");
    if (destination.isPresent() && destination.get().family() != family) {
      throw new IllegalArgumentException("destination " + destination.get() + " is not " + family);
    }
    destination = destination.filter(d -> d.length() > 0);
    if (gateway.isPresent() && (gateway.get().family() != family || !gateway.get().isHost())) {
      throw new IllegalArgumentException("gateway " + gateway.get() + " is not a single " + family + " address");
    }
    if (protocol < 0 || protocol > 255) {
      throw new IllegalArgumentException("route protocol " + protocol + " is out of range 0..255");
    }
  }

  /** A route of {@code type} to {@code destination} (empty = default) in {@code table}, protocol boot like {@code ip route add}. */
  public static Route of(IpFamily family, int table, RouteType type, Optional<IpPrefix> destination) {
    return new Route(family, table, type, destination, Optional.empty(), OptionalInt.empty(),
        NetlinkConstants.RTPROT_BOOT, OptionalInt.empty());
  }

  public Route via(IpPrefix gw) {
    return new Route(family, table, type, destination, Optional.of(gw), oif, protocol, metric, encap);
  }

  public Route dev(int ifindex) {
    return new Route(family, table, type, destination, gateway, OptionalInt.of(ifindex), protocol, metric, encap);
  }

  public Route protocol(int p) {
    return new Route(family, table, type, destination, gateway, oif, p, metric, encap);
  }

  public Route metric(int m) {
    return new Route(family, table, type, destination, gateway, oif, protocol, OptionalInt.of(m), encap);
  }

  /** The same route encapsulated ({@code encap ip id ID dst ADDR}). */
  public Route encap(RouteEncap e) {
    return new Route(family, table, type, destination, gateway, oif, protocol, metric, Optional.of(e));
  }

  /** Like {@code ip route show table N}, with ifindexes instead of names. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    if (type != RouteType.UNICAST) {
      sb.append(type.name().toLowerCase(java.util.Locale.ROOT)).append(' ');
    }
    sb.append(destination.map(IpPrefix::toString).orElse("default"));
    encap.ifPresent(e -> sb.append(' ').append(e));
    gateway.ifPresent(g -> sb.append(" via ").append(g));
    oif.ifPresent(i -> sb.append(" dev #").append(i));
    sb.append(" table ").append(Rule.tableName(table));
    if (protocol != NetlinkConstants.RTPROT_BOOT) {
      sb.append(" proto ").append(Rule.protocolName(protocol));
    }
    metric.ifPresent(m -> sb.append(" metric ").append(Integer.toUnsignedString(m)));
    return sb.toString();
  }
}

package io.egressservice.dataplane;

import io.egressservice.kernel.Kernel;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Address;
import io.egressservice.netlink.BatchResult;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteChange;
import io.egressservice.netlink.RouteEncap;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Routing;
import io.egressservice.netlink.VxlanDevice;
import io.egressservice.plan.SteerRoute;
import io.egressservice.model.SteeringConfig;
import io.egressservice.plan.SteeringPlan;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The steering device and routes of one namespace (DESIGN.md section 6): observe, diff, apply, clean up.
 *
 * <p>The device is one VXLAN-GPE device in collect-metadata mode ({@code ip link add egress-vx type vxlan
 * external gpe dstport 4799 nolearning}), tagged with the alias {@code egress-service-agent}. GPE carries
 * the IP packet without an Ethernet header, so there are no MAC addresses or neighbours to keep right;
 * collect-metadata mode takes each packet's far end from its route ({@code default dev egress-vx encap ip
 * id 1 dst <host> csum}), so one device serves every host and both families. The device has a link-scoped
 * IPv4 address ({@link #DEVICE_ADDRESS}) and {@code rp_filter} 2 (loose), the only sysctl written: the
 * kernel's reverse-path check drops every packet that arrives on an IPv4 device without an address,
 * even in loose mode, and a steered pod's source is routed through the pod network, not this device.
 */
public final class SteeringDataplane {
  /** Link-local, /32: never routed, never a node address; chosen clear of cloud metadata and node-local DNS. */
  public static final IpPrefix DEVICE_ADDRESS = IpPrefix.parse("169.254.0.73");
  /** Outer IPv6 + UDP + VXLAN-GPE headers (no inner Ethernet): the MTU the device gives up. */
  static final int OVERHEAD_V6 = 40 + 8 + 8;
  static final int OVERHEAD_V4 = 20 + 8 + 8;
  static final int DEFAULT_UNDERLAY_MTU = 1500;
  private static final int RT_TABLE_MAIN = 254;
  /** Routing.IPV4_DEVCONF_RP_FILTER of {@code <linux/ip.h>}. */

  private final Routing netlink;
  private final Kernel kernel;
  private final int protocol;

  SteeringDataplane(Kernel kernel, int protocol) {
    this.netlink = kernel.routing();
    this.kernel = kernel;
    this.protocol = protocol;
  }

  /** The device of our name, and (when it is ours) its address, rp_filter and the owned steering routes. */
  SteeringState observe(List<Link> links) {
    Optional<Link> device = links.stream().filter(l -> l.name().equals(SteeringPlan.DEVICE)).findFirst();
    SteeringState partial = new SteeringState(device, List.of(), false, OptionalInt.empty());
    if (!partial.deviceOurs()) {
      return partial;
    }
    int index = device.get().index();
    List<Route> routes = new ArrayList<>();
    for (IpFamily f : IpFamily.values()) {
      for (Route r : netlink.listAllRoutes(f)) {
        if (r.protocol() == protocol && r.oif().isPresent() && r.oif().getAsInt() == index
            && Integer.toUnsignedLong(r.table()) != RT_TABLE_MAIN && r.type() == RouteType.UNICAST
            && r.encap().isPresent()) {
          routes.add(r);
        }
      }
    }
    boolean address = netlink.listAddresses().stream()
        .anyMatch(a -> a.index() == index && a.local().equals(DEVICE_ADDRESS));
    return new SteeringState(device, routes, address, readRpFilter());
  }

  private OptionalInt readRpFilter() {
    return kernel.ipv4Conf(SteeringPlan.DEVICE, "rp_filter").map(OptionalInt::of).orElse(OptionalInt.empty());
  }

  /**
   * The MTU for the device: the smallest of the underlay MTUs toward the hosts (the device of the main
   * table's longest match for each host address) less the encapsulation of that family; without hosts
   * (a node that only receives), a 1500-byte underlay over IPv6.
   */
  int deviceMtu(List<SteerRoute> routes, List<Link> links) {
    Map<Integer, Integer> mtuByIndex = new HashMap<>();
    links.forEach(l -> mtuByIndex.put(l.index(), l.mtu()));
    int best = Integer.MAX_VALUE;
    Map<IpFamily, List<Route>> main = new HashMap<>();
    for (SteerRoute r : routes) {
      IpFamily f = r.hostAddress().family();
      List<Route> table = main.computeIfAbsent(f, fam -> netlink.listRoutes(fam, RT_TABLE_MAIN));
      int underlay = table.stream()
          .filter(m -> m.type() == RouteType.UNICAST && m.oif().isPresent()
              && m.destination().map(d -> d.contains(r.hostAddress())).orElse(true))
          .max(Comparator.comparingInt(m -> m.destination().map(IpPrefix::length).orElse(0)))
          .map(m -> mtuByIndex.getOrDefault(m.oif().getAsInt(), 0)).filter(m -> m > 0).orElse(DEFAULT_UNDERLAY_MTU);
      best = Math.min(best, underlay - (f == IpFamily.V4 ? OVERHEAD_V4 : OVERHEAD_V6));
    }
    return best == Integer.MAX_VALUE ? DEFAULT_UNDERLAY_MTU - OVERHEAD_V6 : best;
  }

  /** Pure: what to change so the kernel holds {@code desired}. */
  static SteeringChanges diff(SteeringPlan desired, SteeringState observed, int protocol, int mtu) {
    boolean wanted = desired.deviceWanted();
    if (observed.deviceForeign()) {
      return wanted
          ? new SteeringChanges(Optional.of("a device named " + SteeringPlan.DEVICE + " exists that the agent did not"
              + " create (no alias " + SteeringPlan.DEVICE_ALIAS + "); it is left alone and nothing is steered on this node"
              + " until it is removed or renamed"), false, Optional.empty(), OptionalInt.empty(), false, false, false,
              List.of(), List.of(), List.of(), false)
          : SteeringChanges.none();
    }
    if (!wanted) {
      return new SteeringChanges(Optional.empty(), false, Optional.empty(), OptionalInt.empty(), false, false, false,
          List.of(), List.of(), observed.routes(), observed.deviceOurs());
    }
    VxlanDevice spec = new VxlanDevice(SteeringPlan.DEVICE, desired.port(), true, mtu, SteeringPlan.DEVICE_ALIAS);
    boolean intact = observed.deviceOurs() && observed.device().get().vxlan()
        .filter(v -> v.external() && v.gpe() && !v.learning() && v.port() == desired.port()).isPresent();
    boolean recreate = !intact;
    Link link = observed.device().orElse(null);
    List<Route> present = recreate ? List.of() : observed.routes();
    int index = recreate ? -1 : link.index();

    Map<String, Route> presentByKey = new HashMap<>();
    present.forEach(r -> presentByKey.put(key(r), r));
    List<Route> adds = new ArrayList<>();
    List<Route> replaced = new ArrayList<>();
    Map<String, Boolean> keep = new HashMap<>();
    for (SteerRoute r : desired.routes()) {
      Route want = route(r, index, protocol);
      String k = key(want);
      keep.put(k, true);
      Route old = presentByKey.get(k);
      if (old != null && old.encap().equals(want.encap())) {
        continue;
      }
      if (old != null) {
        replaced.add(old);
      }
      adds.add(want);
    }
    List<Route> deletes = present.stream().filter(r -> !keep.containsKey(key(r))).toList();
    return new SteeringChanges(Optional.empty(), observed.deviceOurs() && recreate,
        recreate ? Optional.of(spec) : Optional.empty(),
        !recreate && link.mtu() != mtu ? OptionalInt.of(mtu) : OptionalInt.empty(),
        !recreate && !link.up(), recreate || !observed.addressPresent(),
        // rp_filter unreadable (no /proc/sys): set once with the device, not on every reconcile
        recreate || (observed.rpFilter().isPresent() && observed.rpFilter().getAsInt() != 2), replaced, adds, deletes,
        false);
  }

  /** One route per table and family: the default route, over our device (index -1: to be created). */
  static Route route(SteerRoute r, int deviceIndex, int protocol) {
    return Route.of(r.family(), (int) r.table(), RouteType.UNICAST, Optional.empty()).dev(deviceIndex)
        .protocol(protocol).encap(new RouteEncap(r.hostAddress(), SteeringPlan.VNI, true));
  }

  private static String key(Route r) {
    return r.family() + "/" + Integer.toUnsignedString(r.table()) + "/" + r.destination().map(IpPrefix::toString).orElse("default");
  }

  /** The device and the routes new rules will need. Failures are collected; a refused device stops the rest. */
  void applyBefore(SteeringChanges c, List<String> failures, List<Change> done) {
    if (c.refusal().isPresent()) {
      failures.add(c.refusal().get());
      return;
    }
    int index;
    try {
      Optional<Link> current = netlink.listLinks().stream().filter(l -> l.name().equals(SteeringPlan.DEVICE)).findFirst();
      if (c.deleteDeviceFirst() && current.isPresent()) {
        netlink.deleteLink(current.get().index());
        done.add(change("- link " + SteeringPlan.DEVICE + " (not as specified: re-created)"));
        current = Optional.empty();
      }
      if (c.create().isPresent()) {
        if (current.isPresent()) {
          failures.add("link " + SteeringPlan.DEVICE + " appeared meanwhile; the next reconcile looks again");
          return;
        }
        Link created = netlink.createVxlan(c.create().get());
        done.add(change("+ link " + SteeringPlan.DEVICE + " type vxlan external gpe dstport " + c.create().get().port()
            + " mtu " + c.create().get().mtu() + " alias " + SteeringPlan.DEVICE_ALIAS));
        index = created.index();
      } else if (current.isPresent()) {
        index = current.get().index();
      } else if (c.routeAdds().isEmpty() && !c.addAddress() && !c.setRpFilter() && c.setMtu().isEmpty() && !c.setUp()) {
        return;
      } else {
        failures.add("link " + SteeringPlan.DEVICE + " disappeared meanwhile; the next reconcile re-creates it");
        return;
      }
      if (c.setMtu().isPresent() || c.setUp()) {
        netlink.setLink(index, c.setMtu().orElse(0), true, Optional.empty());
        done.add(change("~ link " + SteeringPlan.DEVICE + (c.setMtu().isPresent() ? " mtu " + c.setMtu().getAsInt() : "") + " up"));
      }
      if (c.addAddress()) {
        try {
          netlink.addAddress(new Address(IpFamily.V4, index, DEVICE_ADDRESS, 32, Address.SCOPE_LINK));
        } catch (NetlinkException.AlreadyExists e) {
          // the goal is met
        }
        done.add(change("+ address " + DEVICE_ADDRESS + "/32 scope link dev " + SteeringPlan.DEVICE));
      }
    } catch (NetlinkException e) {
      failures.add("steering device " + SteeringPlan.DEVICE + ": " + e.getMessage());
      return;
    }
    if (c.setRpFilter()) {
      try {
        // Through rtnetlink, not /proc/sys, which a container usually has read-only.
        netlink.setIpv4DeviceConf(index, Routing.IPV4_DEVCONF_RP_FILTER, 2);
        done.add(change("~ sysctl net.ipv4.conf." + SteeringPlan.DEVICE + ".rp_filter=2"));
      } catch (NetlinkException e) {
        failures.add("sysctl net.ipv4.conf." + SteeringPlan.DEVICE + ".rp_filter=2: " + e.getMessage());
      }
    }
    List<RouteChange> routes = new ArrayList<>();
    c.replacedRoutes().forEach(r -> routes.add(RouteChange.delete(r)));
    int device = index;
    c.routeAdds().forEach(r -> routes.add(RouteChange.add(withDevice(r, device))));
    applyRoutes(routes, failures, done);
  }

  /** Routes no rule uses any more, then the device if nothing needs it. */
  void applyAfter(SteeringChanges c, List<String> failures, List<Change> done) {
    applyRoutes(c.routeDeletes().stream().map(RouteChange::delete).toList(), failures, done);
    if (c.deleteDeviceLast()) {
      deleteOurDevice(failures, done);
    }
  }

  /** Everything steering owns here: the routes over our device go with it. */
  void cleanup(List<String> failures, List<Change> done) {
    deleteOurDevice(failures, done);
  }

  private void deleteOurDevice(List<String> failures, List<Change> done) {
    try {
      Optional<Link> current = netlink.listLinks().stream().filter(l -> l.name().equals(SteeringPlan.DEVICE)).findFirst();
      if (current.isPresent() && current.get().alias().filter(SteeringPlan.DEVICE_ALIAS::equals).isPresent()) {
        netlink.deleteLink(current.get().index());
        done.add(change("- link " + SteeringPlan.DEVICE + " (and the steering routes over it)"));
      }
    } catch (NetlinkException.NotFound e) {
      // already gone
    } catch (NetlinkException e) {
      failures.add("delete link " + SteeringPlan.DEVICE + ": " + e.getMessage());
    }
  }

  private void applyRoutes(List<RouteChange> routes, List<String> failures, List<Change> done) {
    if (routes.isEmpty()) {
      return;
    }
    BatchResult<RouteChange> result = netlink.applyRoutes(routes);
    result.succeeded().forEach(r -> done.add(change((r.op() == RouteChange.Op.ADD ? "+ " : "- ") + "route " + r.route())));
    for (BatchResult.Failure<RouteChange> f : result.failed()) {
      boolean met = f.change().op() == RouteChange.Op.DELETE ? f.error() instanceof NetlinkException.NotFound
          : f.error() instanceof NetlinkException.AlreadyExists;
      if (met) {
        done.add(change((f.change().op() == RouteChange.Op.ADD ? "+ " : "- ") + "route " + f.change().route()));
      } else {
        failures.add(f.error().getMessage());
      }
    }
  }

  /** A line like {@code + route default ...} as an applied change of the steering part. */
  static Change change(String line) {
    Change.Op op = line.startsWith("+") ? Change.Op.ADD : line.startsWith("-") ? Change.Op.DELETE : Change.Op.REPLACE;
    return new Change(op, Change.Kind.STEER, Differ.STEERING, line.substring(2));
  }

  /** The changes {@code c} stands for, described like {@link #applyBefore}/{@link #applyAfter} report them. */
  static List<Change> describe(SteeringChanges c) {
    List<Change> out = new ArrayList<>();
    if (c.refusal().isPresent()) {
      out.add(new Change(Change.Op.REPLACE, Change.Kind.STEER, Differ.STEERING, "nothing: " + c.refusal().get()));
      return out;
    }
    if (c.deleteDeviceFirst()) {
      out.add(change("- link " + SteeringPlan.DEVICE + " (not as specified: re-created)"));
    }
    c.create().ifPresent(d -> out.add(change("+ link " + SteeringPlan.DEVICE + " type vxlan external gpe dstport "
        + d.port() + " mtu " + d.mtu() + " alias " + SteeringPlan.DEVICE_ALIAS)));
    if (c.setMtu().isPresent() || c.setUp()) {
      out.add(change("~ link " + SteeringPlan.DEVICE + (c.setMtu().isPresent() ? " mtu " + c.setMtu().getAsInt() : "")
          + " up"));
    }
    if (c.addAddress()) {
      out.add(change("+ address " + DEVICE_ADDRESS + "/32 scope link dev " + SteeringPlan.DEVICE));
    }
    if (c.setRpFilter()) {
      out.add(change("~ sysctl net.ipv4.conf." + SteeringPlan.DEVICE + ".rp_filter=2"));
    }
    c.replacedRoutes().forEach(r -> out.add(change("- route " + r)));
    c.routeAdds().forEach(r -> out.add(change("+ route " + r)));
    c.routeDeletes().forEach(r -> out.add(change("- route " + r)));
    if (c.deleteDeviceLast()) {
      out.add(change("- link " + SteeringPlan.DEVICE + " (and the steering routes over it)"));
    }
    return out;
  }

  private static Route withDevice(Route r, int index) {
    return r.dev(index);
  }

  /** The steering tables of a configuration, for the reader of {@code status}. */
  static boolean isSteeringTable(SteeringConfig config, long table) {
    return config.isSteeringTable(table);
  }
}

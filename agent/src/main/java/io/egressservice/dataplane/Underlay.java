package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.RouteQuery;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Routing;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;

/**
 * The devices this node reaches the other Nodes through: for each Node's InternalIP, the device the kernel's own
 * route lookup ({@code ip route get}, rules and all) sends to it by. The steering port accepts datagrams only on
 * those ({@code underlay} in the guard table): the node network's device(s), never a pod's veth, an uplink or
 * {@code lo}. The node's own addresses (local routes) and unreachable Nodes add nothing.
 *
 * <p>Observed, so cached: read again when the Nodes' InternalIPs change, after {@link #invalidate()} (a link or
 * address notification), and at the guard's periodic check; a route change alone is seen at the latter.
 */
final class Underlay {
  private final Routing netlink;
  private List<IpPrefix> readFor;
  private List<String> devices = List.of();

  Underlay(Routing netlink) {
    this.netlink = netlink;
  }

  /** The devices that reach {@code nodeInternalIps}, sorted; read again when {@code fresh} or they changed. */
  synchronized List<String> devices(List<IpPrefix> nodeInternalIps, boolean fresh) {
    if (!fresh && nodeInternalIps.equals(readFor)) {
      return devices;
    }
    Map<Integer, String> names = new HashMap<>();
    for (Link l : netlink.listLinks()) {
      names.put(l.index(), l.name());
    }
    TreeSet<String> out = new TreeSet<>();
    for (IpPrefix ip : nodeInternalIps) {
      try {
        RouteQuery.Answer a = netlink.routeGet(RouteQuery.Lookup.to(ip));
        if (a.type() == RouteType.UNICAST && a.outputInterface().isPresent()) {
          String name = names.get(a.outputInterface().getAsInt());
          if (name != null) {
            out.add(name);
          }
        }
      } catch (NetlinkException e) {
        // unreachable from here now: nothing arrives from it on a device of its own either
      }
    }
    readFor = List.copyOf(nodeInternalIps);
    devices = List.copyOf(out);
    return devices;
  }

  /** The next {@link #devices} reads the kernel again. */
  synchronized void invalidate() {
    readFor = null;
  }
}

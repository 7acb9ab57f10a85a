package io.egressservice.dataplane;

import io.egressservice.kernel.Kernel;
import io.egressservice.ip.IpFamily;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.Routing;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Mark mode under strict reverse-path filtering ({@code net.ipv4.conf.<dev>.rp_filter} = 1, the
 * larger of {@code all} and the device counts).
 *
 * <p>The kernel checks the source of every packet it receives on such a device with a second route
 * lookup, to the packet's source, and drops the packet unless that lookup leaves through the device it
 * came in on. That lookup sees the packet's mark only where {@code src_valid_mark} is set (the device
 * or {@code all}); otherwise its mark is 0, so it never matches a {@code fwmark} rule and follows the
 * main table. In source mode the {@code from <endpoint>} rule matches it (its source is the packet's
 * destination, the endpoint, after NAT was undone), so it works; in mark mode the replies of a
 * service's connections and its inbound connections arriving on the network's uplink are dropped.
 *
 * <p>So, only for the uplinks of marked networks (the devices the network's table routes through)
 * whose rp_filter is strict: their packets to a marked endpoint get the endpoint's mark (after NAT:
 * the chain {@code mark_reply}, gated by the set {@code mark_reply_ifaces}), and the device gets
 * {@code src_valid_mark=1}, set through rtnetlink (no writable /proc/sys needed). Nothing changes on
 * devices without strict filtering, and other devices never see the setting.
 */
public final class ReversePath {

  private ReversePath() {}

  /**
   * @param strictUplinks uplinks of the marked networks with strict reverse-path filtering
   * @param needSrcValidMark those of them (name to ifindex) where the check would ignore the mark
   */
  public record State(Set<String> strictUplinks, Map<String, Integer> needSrcValidMark) {
    public static final State NONE = new State(Set.of(), Map.of());

    public State {
      strictUplinks = Set.copyOf(strictUplinks);
      needSrcValidMark = Map.copyOf(needSrcValidMark);
    }
  }

  /**
   * Reads the state for the networks routed by {@code tables} (IPv4: IPv6 has no rp_filter setting), with the
   * node's {@code links} as already listed for this reconcile.
   */
  static State observe(Kernel kernel, List<Link> links, Collection<Long> tables) {
    Routing netlink = kernel.routing();
    if (tables.isEmpty()) {
      return State.NONE;
    }
    Map<Integer, String> names = new HashMap<>();
    for (Link l : links) {
      names.put(l.index(), l.name());
    }
    TreeMap<String, Integer> uplinks = new TreeMap<>();
    for (long table : tables) {
      for (Route r : netlink.listRoutes(IpFamily.V4, (int) table)) {
        if (r.oif().isPresent() && names.containsKey(r.oif().getAsInt())) {
          uplinks.put(names.get(r.oif().getAsInt()), r.oif().getAsInt());
        }
      }
    }
    if (uplinks.isEmpty()) {
      return State.NONE;
    }
    int allRp = kernel.ipv4Conf("all", "rp_filter").orElse(0);
    boolean allMark = kernel.ipv4Conf("all", "src_valid_mark").orElse(0) != 0;
    Set<String> strict = new TreeSet<>();
    Map<String, Integer> need = new TreeMap<>();
    for (Map.Entry<String, Integer> u : uplinks.entrySet()) {
      Optional<Integer> rp = kernel.ipv4Conf(u.getKey(), "rp_filter");
      if (rp.isEmpty() || Math.max(allRp, rp.get()) != 1) {
        continue; // gone, off, or loose (2): any route back to the source will do, the main table's too
      }
      strict.add(u.getKey());
      if (!allMark && kernel.ipv4Conf(u.getKey(), "src_valid_mark").orElse(0) == 0) {
        need.put(u.getKey(), u.getValue());
      }
    }
    return new State(strict, need);
  }

  /** Sets src_valid_mark=1 on the device; a message when the kernel refuses it. */
  static Optional<String> enableSrcValidMark(Routing netlink, String device, int ifindex) {
    try {
      netlink.setIpv4DeviceConf(ifindex, Routing.IPV4_DEVCONF_SRC_VMARK, 1);
      return Optional.empty();
    } catch (NetlinkException e) {
      return Optional.of("cannot set net.ipv4.conf." + device + ".src_valid_mark=1: " + e.getMessage()
          + "; with strict rp_filter on " + device + " the replies of marked connections are dropped there"
          + " (set it on the node, or use --rule-mode source)");
    }
  }
}

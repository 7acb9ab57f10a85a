package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * The routing side of one network namespace: rules, routes, links and addresses, read and written, and the
 * notifications of their changes. {@link RtNetlink} is the kernel's; a caller that takes this interface can be
 * given an in-memory one instead (its tests run without privileges).
 */
public interface Routing {
  /** {@code net.ipv4.conf.<dev>.rp_filter} (IPV4_DEVCONF_RP_FILTER), for {@link #setIpv4DeviceConf}. */
  int IPV4_DEVCONF_RP_FILTER = 8;
  /** {@code net.ipv4.conf.<dev>.src_valid_mark} (IPV4_DEVCONF_SRC_VMARK), for {@link #setIpv4DeviceConf}. */
  int IPV4_DEVCONF_SRC_VMARK = 24;

  /** "netns X" or "the current network namespace". */
  String describe();

  /** {@code ip [-6] rule show}. */
  List<Rule> listRules(IpFamily family);

  /**
   * Applies rule changes in order, each acknowledged; a refused one does not stop the others. With {@code exclusive}
   * false the adds skip the kernel's duplicate check (only for rules the caller knows to be absent).
   */
  BatchResult<RuleChange> apply(List<RuleChange> changes, boolean exclusive);

  /** As {@link #apply(List, boolean)}, every add exclusive. */
  default BatchResult<RuleChange> apply(List<RuleChange> changes) {
    return apply(changes, true);
  }

  /** {@code ip [-6] route show table N}, every route type. */
  List<Route> listRoutes(IpFamily family, int table);

  /** The routes of table N as that table holds them (the kernel filters the dump). */
  List<Route> listTableRoutes(IpFamily family, int table);

  /** Every route of {@code type} carrying {@code protocol}, in any table. */
  List<Route> listRoutes(IpFamily family, RouteType type, int protocol);

  /** Every route of the family, every table. */
  List<Route> listAllRoutes(IpFamily family);

  /** Applies route changes in order, each acknowledged; a refused one does not stop the others. */
  BatchResult<RouteChange> applyRoutes(List<RouteChange> changes);

  /** {@code ip route get}. */
  RouteQuery.Answer routeGet(RouteQuery.Lookup lookup);

  /** {@code ip link show}. */
  List<Link> listLinks();

  /** {@code ip addr show}, both families. */
  List<Address> listAddresses();

  /** Creates a VXLAN device, up. */
  Link createVxlan(VxlanDevice device);

  void setLink(int index, int mtu, boolean up, Optional<String> alias);

  void deleteLink(int index);

  void addAddress(Address address);

  /** {@code net.ipv4.conf.<device>.<setting>} through rtnetlink (no writable /proc/sys needed). */
  void setIpv4DeviceConf(int ifindex, int confId, int value);

  /** Notifications of the groups' changes, on a thread of the subscription's; {@code onOverflow} when some were lost. */
  Subscription subscribe(Set<ChangeGroup> groups, Consumer<ChangeEvent> listener, Runnable onOverflow);
}

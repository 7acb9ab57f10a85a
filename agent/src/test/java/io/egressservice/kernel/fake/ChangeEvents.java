package io.egressservice.kernel.fake;

import io.egressservice.ip.IpFamily;
import io.egressservice.netlink.Address;
import io.egressservice.netlink.ChangeEvent;
import io.egressservice.netlink.ChangeGroup;
import io.egressservice.netlink.ChangeKind;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.Rule;
import java.util.Optional;

/** The notification of a change, in the group the kernel sends it to. */
final class ChangeEvents {
  private ChangeEvents() {}

  static ChangeEvent event(ChangeKind kind, Rule r) {
    ChangeGroup g = r.family() == IpFamily.V4 ? ChangeGroup.IPV4_RULE : ChangeGroup.IPV6_RULE;
    return new ChangeEvent(kind, g, Optional.of(r), Optional.empty(), Optional.empty(), Optional.empty());
  }

  static ChangeEvent event(ChangeKind kind, Route r) {
    ChangeGroup g = r.family() == IpFamily.V4 ? ChangeGroup.IPV4_ROUTE : ChangeGroup.IPV6_ROUTE;
    return new ChangeEvent(kind, g, Optional.empty(), Optional.of(r), Optional.empty(), Optional.empty());
  }

  static ChangeEvent event(ChangeKind kind, Link l) {
    return new ChangeEvent(kind, ChangeGroup.LINK, Optional.empty(), Optional.empty(), Optional.of(l), Optional.empty());
  }

  static ChangeEvent event(ChangeKind kind, Address a) {
    ChangeGroup g = a.family() == IpFamily.V4 ? ChangeGroup.IPV4_ADDRESS : ChangeGroup.IPV6_ADDRESS;
    return new ChangeEvent(kind, g, Optional.empty(), Optional.empty(), Optional.empty(), Optional.of(a));
  }

}

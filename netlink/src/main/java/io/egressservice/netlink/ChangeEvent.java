package io.egressservice.netlink;

import java.util.Objects;
import java.util.Optional;

/**
 * One rtnetlink notification (what {@code ip monitor rule route link address} prints). Exactly one
 * of rule / route / link / address is present, matching {@code group}.
 */
public record ChangeEvent(
    ChangeKind kind, ChangeGroup group, Optional<Rule> rule, Optional<Route> route, Optional<Link> link,
    Optional<Address> address) {
  public ChangeEvent {
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(group, "group");
    Objects.requireNonNull(rule, "rule");
    Objects.requireNonNull(route, "route");
    Objects.requireNonNull(link, "link");
    Objects.requireNonNull(address, "address");
  }

  static ChangeEvent ofRule(ChangeKind kind, Rule rule) {
    ChangeGroup g = rule.family() == io.egressservice.ip.IpFamily.V4 ? ChangeGroup.IPV4_RULE : ChangeGroup.IPV6_RULE;
    return new ChangeEvent(kind, g, Optional.of(rule), Optional.empty(), Optional.empty(), Optional.empty());
  }

  static ChangeEvent ofRoute(ChangeKind kind, Route route) {
    ChangeGroup g = route.family() == io.egressservice.ip.IpFamily.V4 ? ChangeGroup.IPV4_ROUTE : ChangeGroup.IPV6_ROUTE;
    return new ChangeEvent(kind, g, Optional.empty(), Optional.of(route), Optional.empty(), Optional.empty());
  }

  static ChangeEvent ofLink(ChangeKind kind, Link link) {
    return new ChangeEvent(kind, ChangeGroup.LINK, Optional.empty(), Optional.empty(), Optional.of(link), Optional.empty());
  }

  static ChangeEvent ofAddress(ChangeKind kind, Address address) {
    ChangeGroup g = address.family() == io.egressservice.ip.IpFamily.V4 ? ChangeGroup.IPV4_ADDRESS : ChangeGroup.IPV6_ADDRESS;
    return new ChangeEvent(kind, g, Optional.empty(), Optional.empty(), Optional.empty(), Optional.of(address));
  }
}

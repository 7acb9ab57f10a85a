package io.egressservice.kernel.fake;

import static io.egressservice.kernel.fake.KernelRoutes.LO;
import static io.egressservice.kernel.fake.KernelRoutes.RTPROT_KERNEL;
import static io.egressservice.kernel.fake.KernelRoutes.RT_TABLE_LOCAL;
import static io.egressservice.kernel.fake.KernelRoutes.RT_TABLE_MAIN;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Address;
import io.egressservice.netlink.BatchResult;
import io.egressservice.netlink.ChangeEvent;
import io.egressservice.netlink.ChangeGroup;
import io.egressservice.netlink.ChangeKind;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteChange;
import io.egressservice.netlink.RouteQuery;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Routing;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleAction;
import io.egressservice.netlink.RuleChange;
import io.egressservice.netlink.Subscription;
import io.egressservice.netlink.VxlanDevice;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The routing side of one fake namespace, as rtnetlink behaves for what the agent asks of it: rules in the kernel's
 * order (by priority, a new rule after the others of its priority), an exclusive add of a rule that is there refused
 * with EEXIST (a non-exclusive one makes a second copy), a delete matched as {@code rule_find} matches it and refused
 * with ENOENT when nothing matches; routes per table and family, keyed as the kernel keys them (destination and
 * metric), a route through a missing device refused (ENODEV), an IPv4 one through a down device too (ENETDOWN), a
 * gateway's device found from the connected routes (else ENETUNREACH); links ({@code lo}, VXLAN devices), addresses
 * and the connected and local routes they bring while their device is up; {@code ip route get} by walking the rules.
 * Every change, made through it or {@linkplain #byHand() by hand} ({@link HandEdits}), is announced to the subscriptions on their own
 * threads.
 *
 * <p>Not modelled: multipath routes, IPv6 link-local addresses and their routes (and the multicast route), neighbours,
 * VRFs, notifications of the connected routes when a device goes up or down, the order of a route dump (routes are
 * listed sorted by table, destination and metric), lost notifications unless {@link HandEdits#loseNotifications()}.
 */
public final class FakeRouting implements Routing {
  private static final int ENETDOWN = 100;
  private static final int ENETUNREACH = 101;
  private static final int EHOSTUNREACH = 113;

  private final String where;
  private final Map<IpFamily, List<Rule>> rules = new EnumMap<>(IpFamily.class);
  private final List<Route> routes = new ArrayList<>();
  private final TreeMap<Integer, Link> links = new TreeMap<>();
  private final List<Address> addresses = new ArrayList<>();
  /** ifindex to IPV4_DEVCONF id to value, as set through rtnetlink or by hand. */
  private final Map<Integer, Map<Integer, Integer>> devconf = new HashMap<>();
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();
  private int nextIndex = 2;
  /**
   * Whether an IPv4 rule was ever added: until then the kernel keeps the local table merged into main, and answers a
   * route lookup from the local table as main's ({@code fib_unmerge} undoes the merge on the first rule, for good).
   */
  private boolean ipv4RuleAdded;

  private record Listener(Set<ChangeGroup> groups, Subscription.Feed feed) {}

  FakeRouting(String where) {
    this.where = where;
    // A namespace as the agent finds one: lo up with its addresses, the default rules (protocol kernel).
    links.put(LO, new Link(LO, "lo", Optional.empty(), OptionalInt.empty(), Optional.empty(), 65536, true,
        Optional.empty()));
    addresses.add(new Address(IpFamily.V4, LO, IpPrefix.parse("127.0.0.1"), 8, Address.SCOPE_HOST));
    addresses.add(new Address(IpFamily.V6, LO, IpPrefix.parse("::1"), 128, Address.SCOPE_HOST));
    for (IpFamily f : IpFamily.values()) {
      List<Rule> list = new ArrayList<>();
      list.add(Rule.lookup(f, 0, RT_TABLE_LOCAL).protocol(RTPROT_KERNEL));
      list.add(Rule.lookup(f, 32766, RT_TABLE_MAIN).protocol(RTPROT_KERNEL));
      if (f == IpFamily.V4) {
        list.add(Rule.lookup(f, 32767, 253).protocol(RTPROT_KERNEL));
      }
      rules.put(f, list);
    }
  }

  @Override
  public String describe() {
    return where;
  }

  // ------------------------------------------------------------------------------------------------ rules

  @Override
  public synchronized List<Rule> listRules(IpFamily family) {
    return List.copyOf(rules.get(family));
  }

  @Override
  public synchronized BatchResult<RuleChange> apply(List<RuleChange> changes, boolean exclusive) {
    return batch(changes, c -> {
      if (c.op() == RuleChange.Op.ADD) {
        addRule(c.rule(), exclusive);
      } else {
        deleteRule(c.rule());
      }
    });
  }

  /** Each change on its own, as the kernel acknowledges each request: a refused one does not stop the others. */
  private static <C> BatchResult<C> batch(List<C> changes, Consumer<C> each) {
    List<C> ok = new ArrayList<>();
    List<BatchResult.Failure<C>> failed = new ArrayList<>();
    for (C c : changes) {
      try {
        each.accept(c);
        ok.add(c);
      } catch (NetlinkException e) {
        failed.add(new BatchResult.Failure<>(c, e));
      }
    }
    return new BatchResult<>(ok, failed);
  }

  void addRule(Rule rule, boolean exclusive) {
    String op = "add " + ruleCommand(rule) + " '" + rule + "'";
    List<Rule> list = rules.get(rule.family());
    if (exclusive && list.contains(rule)) {
      throw NetlinkException.fromErrno(NetlinkException.EEXIST, op, where);
    }
    if (rule.action() == RuleAction.GOTO && rule.gotoTarget().getAsInt() <= rule.priority()) {
      throw NetlinkException.fromErrno(NetlinkException.EINVAL, op, where, "Backward goto not supported");
    }
    int at = 0;
    while (at < list.size() && Integer.compareUnsigned(list.get(at).priority(), rule.priority()) <= 0) {
      at++;
    }
    list.add(at, rule);
    ipv4RuleAdded |= rule.family() == IpFamily.V4;
    announce(ChangeEvents.event(ChangeKind.NEW, rule));
  }

  void deleteRule(Rule request) {
    if (!removeFirst(rules.get(request.family()), r -> RuleMatch.deleteMatches(request, r), r -> ChangeEvents.event(
        ChangeKind.DELETED, r))) {
      throw NetlinkException.fromErrno(NetlinkException.ENOENT, "delete " + ruleCommand(request) + " '" + request
          + "'", where);
    }
  }

  /** Removes the first element {@code match} takes and announces it; false when there is none. */
  private <T> boolean removeFirst(List<T> list, Predicate<T> match, Function<T, ChangeEvent> event) {
    for (int i = 0; i < list.size(); i++) {
      if (match.test(list.get(i))) {
        announce(event.apply(list.remove(i)));
        return true;
      }
    }
    return false;
  }

  private static String ruleCommand(Rule r) {
    return r.family() == IpFamily.V6 ? "ip -6 rule" : "ip rule";
  }

  // ----------------------------------------------------------------------------------------------- routes

  @Override
  public synchronized List<Route> listRoutes(IpFamily family, int table) {
    return allRoutes(family).stream().filter(r -> r.table() == table).toList();
  }

  @Override
  public List<Route> listTableRoutes(IpFamily family, int table) {
    return listRoutes(family, table);
  }

  @Override
  public synchronized List<Route> listRoutes(IpFamily family, RouteType type, int protocol) {
    return allRoutes(family).stream().filter(r -> r.type() == type && r.protocol() == protocol).toList();
  }

  @Override
  public synchronized List<Route> listAllRoutes(IpFamily family) {
    return allRoutes(family);
  }

  /** The routes added and those the addresses of up devices bring, sorted as the listing promises. */
  private List<Route> allRoutes(IpFamily family) {
    List<Route> out = new ArrayList<>();
    routes.stream().filter(r -> r.family() == family).forEach(out::add);
    for (Address a : addresses) {
      if (a.family() == family && links.get(a.index()).up()) {
        out.addAll(KernelRoutes.connected(a));
      }
    }
    out.sort(KernelRoutes.ORDER);
    return out;
  }

  @Override
  public synchronized BatchResult<RouteChange> applyRoutes(List<RouteChange> changes) {
    return batch(changes, c -> {
      if (c.op() == RouteChange.Op.ADD) {
        addRoute(c.route());
      } else {
        deleteRoute(c.route());
      }
    });
  }

  void addRoute(Route asked) {
    String op = "add " + routeCommand(asked) + " '" + asked + "'";
    Route route = asked;
    if (route.family() == IpFamily.V6 && route.metric().isEmpty()) {
      route = route.metric(1024); // what the kernel reports for an IPv6 route added without one
    }
    if (route.family() == IpFamily.V6 && route.oif().isEmpty() && (route.type() == RouteType.THROW
        || route.type() == RouteType.BLACKHOLE || route.type() == RouteType.UNREACHABLE
        || route.type() == RouteType.PROHIBIT)) {
      route = route.dev(LO); // IPv6 reject routes hang on the loopback device, and are listed with it
    }
    if (route.type() == RouteType.UNICAST || route.type() == RouteType.LOCAL) {
      if (route.oif().isPresent()) {
        Link dev = links.get(route.oif().getAsInt());
        if (dev == null) {
          throw NetlinkException.fromErrno(NetlinkException.ENODEV, op, where);
        }
        if (route.family() == IpFamily.V4 && !dev.up()) {
          throw NetlinkException.fromErrno(ENETDOWN, op, where, "Nexthop device is not up");
        }
      } else if (route.gateway().isPresent()) {
        IpPrefix gw = route.gateway().get();
        Optional<Route> via = allRoutes(route.family()).stream()
            .filter(r -> r.table() == RT_TABLE_MAIN && r.type() == RouteType.UNICAST && r.gateway().isEmpty()
                && r.oif().isPresent() && r.destination().map(d -> d.contains(gw)).orElse(false))
            .max(Comparator.comparingInt(r -> r.destination().get().length()));
        if (via.isEmpty()) {
          throw NetlinkException.fromErrno(ENETUNREACH, op, where, "Nexthop has invalid gateway");
        }
        route = new Route(route.family(), route.table(), route.type(), route.destination(), route.gateway(),
            via.get().oif(), route.protocol(), route.metric(), route.encap());
      } else {
        throw NetlinkException.fromErrno(NetlinkException.EINVAL, op, where, "Device only routes require a device");
      }
    }
    Route adding = route;
    if (routes.stream().anyMatch(r -> KernelRoutes.sameKey(r, adding))) {
      throw NetlinkException.fromErrno(NetlinkException.EEXIST, op, where);
    }
    routes.add(route);
    announce(ChangeEvents.event(ChangeKind.NEW, route));
  }

  /** As {@code ip route del}: destination and table exactly; type, protocol, device, gateway, metric when given. */
  void deleteRoute(Route request) {
    if (!removeFirst(routes, r -> KernelRoutes.deleteMatches(request, r), r -> ChangeEvents.event(ChangeKind.DELETED, r))) {
      throw NetlinkException.fromErrno(NetlinkException.ESRCH, "delete " + routeCommand(request) + " '" + request
          + "'", where);
    }
  }

  private static String routeCommand(Route r) {
    return r.family() == IpFamily.V6 ? "ip -6 route" : "ip route";
  }

  /**
   * {@code ip route get}: the rules walked in order, each table's longest match (a throw route goes on to the next
   * rule), the local table's routes answered through {@code lo}.
   */
  @Override
  public synchronized RouteQuery.Answer routeGet(RouteQuery.Lookup q) {
    IpFamily f = q.destination().family();
    String iif = q.inputInterface().isPresent()
        ? Optional.ofNullable(links.get(q.inputInterface().getAsInt())).map(Link::name).orElse("")
        : "lo";
    String op = "ip route get " + q.destination().addressText();
    List<Route> all = allRoutes(f);
    for (Rule rule : rules.get(f)) {
      if (!RuleMatch.packetMatches(rule, q, iif)) {
        continue;
      }
      if (RuleMatch.refuses(rule.action())) {
        int errno = rule.action() == RuleAction.PROHIBIT ? NetlinkException.EACCES
            : rule.action() == RuleAction.UNREACHABLE ? EHOSTUNREACH : NetlinkException.EINVAL;
        throw NetlinkException.fromErrno(errno, op, where);
      }
      if (rule.action() != RuleAction.TO_TABLE) {
        continue; // goto and nop: not followed here
      }
      Optional<Route> hit = all.stream()
          .filter(r -> r.table() == rule.table() && r.destination().map(d -> d.contains(q.destination())).orElse(true))
          .max(Comparator.comparingInt(r -> r.destination().map(IpPrefix::length).orElse(0)));
      if (hit.isEmpty() || hit.get().type() == RouteType.THROW) {
        continue;
      }
      Route r = hit.get();
      if (r.type() == RouteType.BLACKHOLE || r.type() == RouteType.UNREACHABLE || r.type() == RouteType.PROHIBIT) {
        throw NetlinkException.fromErrno(r.type() == RouteType.PROHIBIT ? NetlinkException.EACCES
            : r.type() == RouteType.UNREACHABLE ? EHOSTUNREACH : NetlinkException.EINVAL, op, where);
      }
      OptionalInt out = r.type() == RouteType.LOCAL ? OptionalInt.of(LO) : r.oif();
      Optional<IpPrefix> src = r.type() == RouteType.LOCAL ? r.destination()
          : addresses.stream().filter(a -> a.family() == f && r.oif().isPresent() && a.index() == r.oif().getAsInt())
              .map(Address::local).findFirst();
      long table = f == IpFamily.V4 && r.table() == RT_TABLE_LOCAL && !ipv4RuleAdded ? RT_TABLE_MAIN
          : Integer.toUnsignedLong(r.table());
      return new RouteQuery.Answer(f, table, r.type(), out, r.gateway(), src);
    }
    throw NetlinkException.fromErrno(ENETUNREACH, op, where);
  }

  // ------------------------------------------------------------------------------------------------ links

  @Override
  public synchronized List<Link> listLinks() {
    return List.copyOf(links.values());
  }

  @Override
  public synchronized Link createVxlan(VxlanDevice device) {
    String op = "add ip link '" + device.name() + " type vxlan external" + (device.gpe() ? " gpe" : "") + " dstport "
        + device.port() + "'";
    if (links.values().stream().anyMatch(l -> l.name().equals(device.name()))) {
      throw NetlinkException.fromErrno(NetlinkException.EEXIST, op, where);
    }
    if (links.values().stream().anyMatch(l -> l.vxlan().map(v -> v.external() && v.port() == device.port()
        && v.gpe() == device.gpe()).orElse(false))) {
      throw NetlinkException.fromErrno(NetlinkException.EEXIST, op, where,
          "A VXLAN device with the specified VNI already exists");
    }
    Link link = new Link(nextIndex++, device.name(), Optional.of("vxlan"), OptionalInt.empty(),
        Optional.of(device.alias()), device.mtu() > 0 ? device.mtu() : 1450, true,
        Optional.of(new Link.Vxlan(device.port(), true, device.gpe(), false)));
    links.put(link.index(), link);
    announce(ChangeEvents.event(ChangeKind.NEW, link));
    return link;
  }

  @Override
  public synchronized void setLink(int index, int mtu, boolean up, Optional<String> alias) {
    Link l = existing(index, "set ip link #" + index);
    Link changed = new Link(l.index(), l.name(), l.kind(), l.vrfTable(), alias.isPresent() ? alias : l.alias(),
        mtu > 0 ? mtu : l.mtu(), up, l.vxlan());
    links.put(index, changed);
    announce(ChangeEvents.event(ChangeKind.NEW, changed));
  }

  @Override
  public synchronized void deleteLink(int index) {
    Link l = existing(index, "delete ip link #" + index);
    // As the kernel does: the device's addresses go (and the routes they brought), then the routes through it.
    for (Address a : List.copyOf(addresses)) {
      if (a.index() == index) {
        addresses.remove(a);
        announce(ChangeEvents.event(ChangeKind.DELETED, a));
      }
    }
    for (Route r : List.copyOf(routes)) {
      if (r.oif().isPresent() && r.oif().getAsInt() == index) {
        routes.remove(r);
        announce(ChangeEvents.event(ChangeKind.DELETED, r));
      }
    }
    devconf.remove(index);
    links.remove(index);
    announce(ChangeEvents.event(ChangeKind.DELETED, l));
  }

  private Link existing(int index, String op) {
    Link l = links.get(index);
    if (l == null) {
      throw NetlinkException.fromErrno(NetlinkException.ENODEV, op, where);
    }
    return l;
  }

  // -------------------------------------------------------------------------------------------- addresses

  @Override
  public synchronized List<Address> listAddresses() {
    return List.copyOf(addresses);
  }

  @Override
  public synchronized void addAddress(Address address) {
    String op = "add ip addr '" + address + "'";
    Link l = existing(address.index(), op);
    if (addresses.stream().anyMatch(a -> a.index() == address.index() && a.local().equals(address.local()))) {
      throw NetlinkException.fromErrno(NetlinkException.EEXIST, op, where);
    }
    addresses.add(address);
    announce(ChangeEvents.event(ChangeKind.NEW, address));
    if (l.up()) {
      KernelRoutes.connected(address).forEach(r -> announce(ChangeEvents.event(ChangeKind.NEW, r)));
    }
  }

  @Override
  public synchronized void setIpv4DeviceConf(int ifindex, int confId, int value) {
    existing(ifindex, "set ipv4 devconf " + confId + "=" + value + " on ifindex " + ifindex);
    devconf.computeIfAbsent(ifindex, k -> new HashMap<>()).put(confId, value);
  }

  /** {@code net.ipv4.conf.<device>.<confId>}: what was set, else 0 (a new namespace's default); empty: no device. */
  synchronized Optional<Integer> ipv4Conf(String device, int confId) {
    return links.values().stream().filter(l -> l.name().equals(device)).findFirst()
        .map(l -> devconf.getOrDefault(l.index(), Map.of()).getOrDefault(confId, 0));
  }

  // ---------------------------------------------------------------------------------------- notifications

  @Override
  public Subscription subscribe(Set<ChangeGroup> groups, Consumer<ChangeEvent> listener, Runnable onOverflow) {
    if (groups.isEmpty()) {
      throw new IllegalArgumentException("subscribe to at least one group");
    }
    Set<ChangeGroup> wanted = EnumSet.copyOf(groups);
    Subscription.Feed feed = Subscription.fed("subscription to " + wanted + " in " + where, listener, onOverflow);
    listeners.add(new Listener(wanted, feed));
    return feed.subscription();
  }

  /** Ends every subscription made through it, as closing an rtnetlink connection does. */
  void closeSubscriptions() {
    listeners.forEach(l -> l.feed().subscription().close());
    listeners.clear();
  }

  /** Called with the lock held: every subscriber sees the changes in the order they were made. */
  private void announce(ChangeEvent e) {
    listeners.removeIf(l -> l.feed().subscription().isClosed());
    for (Listener l : listeners) {
      if (l.groups().contains(e.group())) {
        l.feed().sink().accept(e);
      }
    }
  }

  // ------------------------------------------------------------------------------------------ by hand

  /** Changes made as an administrator would make them with {@code ip}, beside the agent: drift, announced. */
  public HandEdits byHand() {
    return new HandEdits(this);
  }

  /** {@code ip link add NAME type KIND mtu M [up]}. */
  synchronized Link addLink(String name, String kind, int mtu, boolean up) {
    if (links.values().stream().anyMatch(l -> l.name().equals(name))) {
      throw NetlinkException.fromErrno(NetlinkException.EEXIST, "add ip link " + name, where);
    }
    Link link = new Link(nextIndex++, name, Optional.of(kind), OptionalInt.empty(), Optional.empty(), mtu, up,
        Optional.empty());
    links.put(link.index(), link);
    announce(ChangeEvents.event(ChangeKind.NEW, link));
    return link;
  }

  /** Each subscription's {@code onOverflow}, on its thread, after the events announced before. */
  synchronized void loseNotifications() {
    listeners.forEach(l -> l.feed().overflow().run());
  }
}

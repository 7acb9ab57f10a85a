package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import io.egressservice.ip.IpFamily;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;

/**
 * A NETLINK_ROUTE connection in one network namespace: rules (read/write), routes (read/write),
 * links and addresses (read, and the few writes steering needs) and change notifications. Each instance owns one socket, created and used on a
 * {@link NetnsThread} of that namespace; calls from any thread are serialised onto it. The
 * equivalent of a vishvananda/netlink {@code Handle}.
 *
 * <p>This class says what each operation sends and keeps; how requests travel (acknowledgements, dumps,
 * batches) is {@link NetlinkChannel}'s, and notifications are {@link Notifications}'.
 *
 * <p>Errors come back as the typed {@link NetlinkException}s, with the request and the namespace in
 * the message (and the kernel's extended-ACK text when it gives one).
 */
public final class RtNetlink implements Routing, AutoCloseable {
  /** Upper bound of one encoded rule request (v6 src+dst, both ifnames and every u32). */
  private static final int MAX_RULE_MESSAGE = 256;
  /** Upper bound of one encoded route request (rtmsg, v6 dst and gateway, table, oif, metric, ip6 encap). */
  private static final int MAX_ROUTE_MESSAGE = 192;

  private final NetnsThread thread;
  private final boolean ownsThread;
  private final NetlinkChannel channel;
  /** The channel's, for the encode callbacks (which run on the namespace's thread). */
  private final NetlinkMessageWriter writer;
  private final List<Subscription> subscriptions = new CopyOnWriteArrayList<>();

  /** How many dump requests (rules, routes, links, addresses) this instance has sent: for tests and benchmarks. */
  public long dumpRequests() {
    return channel.dumpRequests();
  }

  private RtNetlink(NetnsThread thread, boolean ownsThread) {
    this.thread = thread;
    this.ownsThread = ownsThread;
    this.channel = new NetlinkChannel(thread);
    this.writer = channel.writer();
  }

  /**
   * Opens a connection in the named namespace ({@code ip netns exec NAME ...}), or in the current one
   * when empty, on a thread of its own that {@link #close()} ends.
   *
   * @throws NetlinkException.NoSuchNamespace if {@code /run/netns/NAME} does not exist
   * @throws NetlinkException.PermissionDenied without CAP_SYS_ADMIN (setns) / CAP_NET_ADMIN
   */
  public static RtNetlink open(Optional<String> netns) {
    NetnsThread t = NetnsThread.enter(netns);
    try {
      return new RtNetlink(t, true);
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
  }

  /** Opens a connection on a caller-owned namespace thread, which {@link #close()} leaves running. */
  public static RtNetlink open(NetnsThread thread) {
    return new RtNetlink(thread, false);
  }

  /** "netns X" or "the current network namespace". */
  @Override
  public String describe() {
    return thread.describe();
  }

  // ---------------------------------------------------------------------------------------- rules

  /**
   * All rules of one family: {@code ip -4 rule show} / {@code ip -6 rule show}. Retried when the
   * kernel flags the dump as interrupted (NLM_F_DUMP_INTR: the list changed while being read).
   */
  @Override
  public List<Rule> listRules(IpFamily family) {
    return channel.dump(
        "list " + ruleCommand(family),
        s -> RuleCodec.encodeDump(writer, s, family),
        m -> m.type() == RTM_NEWRULE ? RuleCodec.decode(m.payload()).filter(r -> r.family() == family) : Optional.empty());
  }

  /**
   * {@code ip rule add ...}: adds the rule with NLM_F_CREATE|NLM_F_EXCL.
   *
   * @throws NetlinkException.AlreadyExists when an identical rule exists (EEXIST)
   * @throws NetlinkException.InvalidArgument when the kernel refuses it (EINVAL, e.g. a goto to a
   *     priority at or below the rule's own)
   */
  public void addRule(Rule rule) {
    String op = describeChange(RuleChange.add(rule));
    channel.request(op, s -> RuleCodec.encode(writer, RTM_NEWRULE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, s, rule));
  }

  /**
   * {@code ip rule del ...}: deletes the first rule (in priority order) that matches.
   *
   * <p>The kernel's matching ({@code rule_find} in net/core/fib_rules.c) treats what the request does
   * not say as a wildcard: action, table, iif/oif, fwmark/fwmask, suppress_prefixlength and
   * protocol are compared only when non-zero / set, the source and destination only when their
   * prefix length is non-zero. The priority is always sent, so it always matches exactly. A rule
   * "from all" with protocol 0 therefore deletes the first rule of that priority and action, whatever
   * its source or protocol: give the source and the protocol (the agent's 201) to delete exactly
   * one rule. FRA_PROTOCOL is sent whenever {@code rule.protocol() != 0}.
   *
   * @throws NetlinkException.NotFound when nothing matches (ENOENT)
   */
  public void deleteRule(Rule rule) {
    String op = describeChange(RuleChange.delete(rule));
    channel.request(op, s -> RuleCodec.encode(writer, RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK, s, rule));
  }

  /**
   * Applies many rule changes in order, like {@code ip -batch} of {@code rule add}/{@code rule del}
   * lines but with many requests per {@code sendmsg}: chunks are sized so the acknowledgements fit
   * the socket's receive buffer. Every request is acknowledged; a failed request is reported in
   * {@link BatchResult#failed()} with its typed error and does not stop the others (there is no
   * transaction: the kernel applies each request on its own).
   */
  @Override
  public BatchResult<RuleChange> apply(List<RuleChange> changes) {
    return apply(changes, true);
  }

  /**
   * As {@link #apply(List)}; with {@code exclusive} false the adds go without NLM_F_EXCL, so the kernel
   * skips its duplicate scan (rule_exists walks every rule of the family once more per add) and never
   * answers EEXIST: an add of a rule that is already there makes a second copy. Only for adds the caller
   * knows to be absent (planned against a fresh dump or an exact kernel view).
   */
  @Override
  public BatchResult<RuleChange> apply(List<RuleChange> changes, boolean exclusive) {
    List<RuleChange> in = List.copyOf(changes);
    int addFlags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | (exclusive ? NLM_F_EXCL : 0);
    return channel.batch(in, MAX_RULE_MESSAGE, (c, s) -> {
      if (c.op() == RuleChange.Op.ADD) {
        RuleCodec.encode(writer, RTM_NEWRULE, addFlags, s, c.rule());
      } else {
        RuleCodec.encode(writer, RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK, s, c.rule());
      }
    }, RtNetlink::describeChange);
  }

  private static String ruleCommand(IpFamily family) {
    return family == IpFamily.V6 ? "ip -6 rule" : "ip rule";
  }

  static String describeChange(RuleChange c) {
    return (c.op() == RuleChange.Op.ADD ? "add " : "delete ") + ruleCommand(c.rule().family()) + " '" + c.rule() + "'";
  }

  // --------------------------------------------------------------------------------------- routes

  @Override
  public RouteQuery.Answer routeGet(RouteQuery.Lookup lookup) {
    return RouteQuery.get(thread, lookup);
  }

  /**
   * The routes of one table and family: {@code ip [-6] route show table N} (all route types; cache
   * clones are skipped). The kernel dumps every table; the table is filtered here on RTA_TABLE.
   */
  @Override
  public List<Route> listRoutes(IpFamily family, int table) {
    return channel.dump(
        "list " + (family == IpFamily.V6 ? "ip -6 route" : "ip route") + " table " + Integer.toUnsignedString(table),
        s -> RouteCodec.encodeDump(writer, s, family),
        m -> m.type() == RTM_NEWROUTE
            ? RouteCodec.decode(m.payload()).filter(r -> r.family() == family && r.table() == table)
            : Optional.empty());
  }

  /**
   * The routes of one table and family, as {@link #listRoutes(IpFamily, int)}, by a dump the kernel filters to that
   * table (since Linux 4.20, with strict checking, on the filtering socket): its cost follows the table's size, not
   * the node's. An older kernel dumps every table and the table is filtered here. A table that does not exist has
   * no routes (the kernel answers ENOENT for it).
   */
  @Override
  public List<Route> listTableRoutes(IpFamily family, int table) {
    String op = "list " + (family == IpFamily.V6 ? "ip -6 route" : "ip route") + " table "
        + Integer.toUnsignedString(table);
    try {
      return channel.dumpFiltered(op, s -> RouteCodec.encodeTableDump(writer, s, family, table),
          m -> m.type() == RTM_NEWROUTE
              ? RouteCodec.decode(m.payload()).filter(r -> r.family() == family && r.table() == table)
              : Optional.empty());
    } catch (NetlinkException.NotFound e) {
      return List.of();
    }
  }

  /** {@code ip route add ...} (NLM_F_CREATE|NLM_F_EXCL): AlreadyExists on EEXIST. */
  public void addRoute(Route route) {
    channel.request("add " + routeCommand(route) + " '" + route + "'",
        s -> RouteCodec.encode(writer, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, s, route));
  }

  /**
   * {@code ip route del ...}: the kernel matches destination and table exactly; type, protocol,
   * gateway/oif and metric only when given (scope is sent as "nowhere", i.e. any). NotFound on ESRCH.
   */
  public void deleteRoute(Route route) {
    channel.request("delete " + routeCommand(route) + " '" + route + "'",
        s -> RouteCodec.encode(writer, RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK, s, route));
  }

  /**
   * Applies many route changes in order, like {@code ip -batch} of {@code route add}/{@code route del}
   * lines, chunked as {@link #apply} chunks rules; a failed request is reported in {@link
   * BatchResult#failed()} with its typed error and does not stop the others.
   */
  @Override
  public BatchResult<RouteChange> applyRoutes(List<RouteChange> changes) {
    List<RouteChange> in = List.copyOf(changes);
    return channel.batch(in, MAX_ROUTE_MESSAGE, (c, s) -> {
      if (c.op() == RouteChange.Op.ADD) {
        RouteCodec.encode(writer, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, s, c.route());
      } else {
        RouteCodec.encode(writer, RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK, s, c.route());
      }
    }, c -> (c.op() == RouteChange.Op.ADD ? "add " : "delete ") + routeCommand(c.route()) + " '" + c.route() + "'");
  }

  /**
   * The routes of one type and protocol in every table of one family: {@code ip [-6] route show table
   * all type T proto P}. The kernel filters (since Linux 4.20, with strict checking, on a socket of its
   * own so no other request is judged strictly), so a node with large routing tables sends only these;
   * the result is filtered here too, for older kernels.
   */
  @Override
  public List<Route> listRoutes(IpFamily family, RouteType type, int protocol) {
    String op = "list " + (family == IpFamily.V6 ? "ip -6 route" : "ip route") + " table all type "
        + type.name().toLowerCase(java.util.Locale.ROOT) + " proto " + protocol;
    return channel.dumpFiltered(op, s -> RouteCodec.encodeDump(writer, s, family, protocol, type.rtn()),
        m -> m.type() == RTM_NEWROUTE
            ? RouteCodec.decode(m.payload()).filter(r -> r.family() == family && r.type() == type && r.protocol() == protocol)
            : Optional.empty());
  }


  /**
   * The routes of every table of one family: {@code ip [-6] route show table all} (cache clones
   * skipped), for a caller that looks at several tables with one dump.
   */
  @Override
  public List<Route> listAllRoutes(IpFamily family) {
    return channel.dump(
        "list " + (family == IpFamily.V6 ? "ip -6 route" : "ip route") + " table all",
        s -> RouteCodec.encodeDump(writer, s, family),
        m -> m.type() == RTM_NEWROUTE ? RouteCodec.decode(m.payload()).filter(r -> r.family() == family) : Optional.empty());
  }

  private static String routeCommand(Route r) {
    return r.family() == IpFamily.V6 ? "ip -6 route" : "ip route";
  }

  // ---------------------------------------------------------------------------------------- links

  /** {@code ip -d link show}: every device with its index, name, kind and VRF table. */
  @Override
  public List<Link> listLinks() {
    return channel.dump("list links (ip link show)", s -> LinkCodec.encodeDump(writer, s),
        m -> m.type() == RTM_NEWLINK ? Optional.of(LinkCodec.decode(m.payload())) : Optional.empty());
  }


  /**
   * Sets {@code net.ipv4.conf.<device>.<setting>} through rtnetlink (RTM_SETLINK, IFLA_INET_CONF), which
   * needs CAP_NET_ADMIN only, not a writable /proc/sys.
   *
   * @param confId the IPV4_DEVCONF_* id, e.g. {@link #IPV4_DEVCONF_SRC_VMARK}
   * @throws NetlinkException.NotFound when the device is gone
   */
  @Override
  public void setIpv4DeviceConf(int ifindex, int confId, int value) {
    channel.request("set ipv4 devconf " + confId + "=" + value + " on ifindex " + ifindex,
        s -> LinkCodec.encodeSetIpv4Conf(writer, s, ifindex, confId, value));
  }

  /**
   * Creates a collect-metadata VXLAN device, up, then tags it with its alias (the kernel takes no alias
   * on creation), and returns it as listed.
   *
   * @throws NetlinkException.AlreadyExists when a device of that name exists (EEXIST)
   */
  @Override
  public Link createVxlan(VxlanDevice device) {
    channel.request("add ip link '" + device.name() + " type vxlan external" + (device.gpe() ? " gpe" : "") + " dstport "
        + device.port() + "'", s -> LinkCodec.encodeCreateVxlan(writer, s, device));
    Link created = listLinks().stream().filter(l -> l.name().equals(device.name())).findFirst()
        .orElseThrow(() -> new NetlinkException(NetlinkException.ENODEV, "the device " + device.name()
            + " created in " + describe() + " is gone again", "add ip link " + device.name()));
    setLink(created.index(), 0, true, Optional.of(device.alias()));
    return new Link(created.index(), created.name(), created.kind(), created.vrfTable(), Optional.of(device.alias()),
        created.mtu(), true, created.vxlan());
  }

  /**
   * Creates a collect-metadata VXLAN device and leaves it down: a down VXLAN device has no UDP socket, so it receives
   * and sends nothing (the kernel probe's throwaway device, made in the node's own namespace). No alias is set.
   *
   * @throws NetlinkException.AlreadyExists when a device of that name, or one with the same port and flags, exists
   */
  public Link createVxlanDown(VxlanDevice device) {
    channel.request("add ip link '" + device.name() + " type vxlan external" + (device.gpe() ? " gpe" : "") + " dstport "
        + device.port() + "' (down)", s -> LinkCodec.encodeCreateVxlan(writer, s, device, false));
    return listLinks().stream().filter(l -> l.name().equals(device.name())).findFirst()
        .orElseThrow(() -> new NetlinkException(NetlinkException.ENODEV, "the device " + device.name()
            + " created in " + describe() + " is gone again", "add ip link " + device.name()));
  }

  /** {@code ip link set dev #INDEX [mtu M] [alias A] up|down} (mtu 0, no alias: left as they are). */
  @Override
  public void setLink(int index, int mtu, boolean up, Optional<String> alias) {
    channel.request("set ip link #" + index + (mtu > 0 ? " mtu " + mtu : "") + alias.map(a -> " alias " + a).orElse("")
        + (up ? " up" : " down"), s -> LinkCodec.encodeSet(writer, s, index, mtu, up, alias));
  }

  /** {@code ip link del dev #INDEX}: NotFound (ENODEV) when there is no such device. */
  @Override
  public void deleteLink(int index) {
    channel.request("delete ip link #" + index, s -> LinkCodec.encodeDelete(writer, s, index));
  }

  // ------------------------------------------------------------------------------------ addresses

  /** {@code ip addr add ...}: AlreadyExists when the device has that address. */
  @Override
  public void addAddress(Address address) {
    channel.request("add ip addr '" + address + "'", s -> AddressCodec.encodeAdd(writer, s, address));
  }

  /** {@code ip addr show}: every IPv4 and IPv6 address on every device of the namespace. */
  @Override
  public List<Address> listAddresses() {
    return channel.dump("list addresses (ip addr show)", s -> AddressCodec.encodeDump(writer, s),
        m -> m.type() == RTM_NEWADDR ? AddressCodec.decode(m.payload()) : Optional.empty());
  }

  // -------------------------------------------------------------------------------- notifications

  /** As {@link #subscribe(Set, Consumer, Runnable)} with no overflow callback. */
  public Subscription subscribe(Set<ChangeGroup> groups, Consumer<ChangeEvent> listener) {
    return subscribe(groups, listener, () -> {});
  }

  /**
   * {@code ip monitor rule route link}: a separate socket bound to the given multicast groups
   * (RTNLGRP_IPV4_RULE, ...), read on a thread of its own in the same namespace; the listener runs on
   * that thread. Events after this method returns are delivered. If the kernel drops notifications
   * because the listener is slow (ENOBUFS), {@code onOverflow} runs: the caller should re-list.
   * A listener that throws is logged and does not stop the subscription. The listener may call this
   * connection (e.g. re-list rules: it runs on another thread) and may close the subscription.
   */
  @Override
  public Subscription subscribe(Set<ChangeGroup> groups, Consumer<ChangeEvent> listener, Runnable onOverflow) {
    channel.checkOpen();
    Subscription sub = Notifications.subscribe(thread, groups, listener, onOverflow);
    subscriptions.add(sub);
    return sub;
  }

  /** Closes the socket, the subscriptions made through it, and the thread if this connection owns it. */
  @Override
  public void close() {
    if (channel.isClosed()) {
      return;
    }
    for (Subscription s : subscriptions) {
      s.close();
    }
    try {
      channel.close();
    } finally {
      if (ownsThread) {
        thread.close();
      }
    }
  }
}

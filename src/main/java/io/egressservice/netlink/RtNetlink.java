package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import io.egressservice.ip.IpFamily;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.IntConsumer;

/**
 * A NETLINK_ROUTE connection in one network namespace: rules (read/write), routes (read/write),
 * links and addresses (read, and the few writes steering needs) and change notifications. Each instance owns one socket, created and used on a
 * {@link NetnsThread} of that namespace; calls from any thread are serialised onto it. The
 * equivalent of a vishvananda/netlink {@code Handle}.
 *
 * <p>Errors come back as the typed {@link NetlinkException}s, with the request and the namespace in
 * the message (and the kernel's extended-ACK text when it gives one).
 */
public final class RtNetlink implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(RtNetlink.class.getName());
  /** Requested SO_RCVBUF / SO_SNDBUF; the kernel doubles it for its bookkeeping. */
  static final int SOCKET_BUFFER_BYTES = 4 << 20;
  /**
   * One received datagram: the kernel sends dumps in skbs of at most 32 KiB (it caps its record of
   * our largest read there), notifications and ACKs are one message each, so twice that is ample; a
   * larger datagram would be reported (MSG_TRUNC), never silently cut. Each socket's buffer is
   * direct memory that stays resident, hence not the megabyte it once was.
   */
  private static final int RECEIVE_BYTES = 64 * 1024;
  /** Batch chunk size in bytes (also capped by SO_SNDBUF). */
  private static final int SEND_BYTES = 1 << 20;
  /** Upper bound of one encoded rule request (v6 src+dst, both ifnames and every u32). */
  private static final int MAX_RULE_MESSAGE = 256;
  /** Upper bound of one encoded route request (rtmsg, v6 dst and gateway, table, oif, metric, ip6 encap). */
  private static final int MAX_ROUTE_MESSAGE = 192;
  /**
   * Receive-queue memory one acknowledgement takes (skb truesize, conservatively): a chunk must not
   * produce more ACKs than the receive buffer holds, or the kernel drops them (ENOBUFS).
   */
  private static final int ACK_TRUESIZE = 2048;
  private static final int DUMP_ATTEMPTS = 5;

  private final NetnsThread thread;
  private final boolean ownsThread;
  private final NetlinkSocket socket;
  private final ByteBuffer sendBuffer;
  private final ByteBuffer receiveBuffer;
  private final NetlinkMessageWriter writer;
  private final int maxMessagesPerChunk;
  private final int maxChunkBytes;
  private final List<Subscription> subscriptions = new CopyOnWriteArrayList<>();
  /** Opened on first use: a socket with strict checking, whose dumps the kernel filters (see {@link #listRoutes(IpFamily, RouteType, int)}). */
  private NetlinkSocket filteringSocket;
  private int seq;
  private boolean closed;
  private final java.util.concurrent.atomic.AtomicLong dumps = new java.util.concurrent.atomic.AtomicLong();

  /** How many dump requests (rules, routes, links, addresses) this instance has sent: for tests and benchmarks. */
  public long dumpRequests() {
    return dumps.get();
  }

  private RtNetlink(NetnsThread thread, boolean ownsThread) {
    this.thread = thread;
    this.ownsThread = ownsThread;
    this.socket = thread.call(() -> openSocket(0, thread.describe()));
    this.sendBuffer = ByteBuffer.allocateDirect(SEND_BYTES);
    this.receiveBuffer = ByteBuffer.allocateDirect(RECEIVE_BYTES).order(java.nio.ByteOrder.nativeOrder());
    this.writer = new NetlinkMessageWriter(sendBuffer);
    int rcv = Math.max(socket.receiveBufferSize(), 64 * 1024);
    int snd = Math.max(socket.sendBufferSize(), 64 * 1024);
    this.maxMessagesPerChunk = Math.max(16, rcv / ACK_TRUESIZE);
    this.maxChunkBytes = Math.min(SEND_BYTES, snd - 32);
    this.seq = (int) (System.nanoTime() & 0x3fffffff);
  }

  private static NetlinkSocket openSocket(int groups, String where) {
    NetlinkSocket s = NetlinkSocket.open(NETLINK_ROUTE, groups, where);
    s.setBufferSizes(SOCKET_BUFFER_BYTES);
    // Extended ACKs: the kernel explains EINVAL and friends in text. Capped ACKs: an error echoes only
    // the request's header, not the whole request. Both are optional; old kernels ignore them.
    s.setOption(SOL_NETLINK, NETLINK_EXT_ACK, 1);
    s.setOption(SOL_NETLINK, NETLINK_CAP_ACK, 1);
    return s;
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
  public String describe() {
    return thread.describe();
  }

  /** Sequence numbers simply wrap; differences are computed in int arithmetic, so they stay right. */
  private int nextSeq() {
    return ++seq;
  }

  private void checkOpen() {
    if (closed) {
      throw new IllegalStateException("netlink connection to " + describe() + " is closed");
    }
  }

  // ---------------------------------------------------------------------------------------- rules

  /**
   * All rules of one family: {@code ip -4 rule show} / {@code ip -6 rule show}. Retried when the
   * kernel flags the dump as interrupted (NLM_F_DUMP_INTR: the list changed while being read).
   */
  public List<Rule> listRules(IpFamily family) {
    return dump(
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
    request(op, s -> RuleCodec.encode(writer, RTM_NEWRULE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, s, rule));
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
    request(op, s -> RuleCodec.encode(writer, RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK, s, rule));
  }

  /**
   * Applies many rule changes in order, like {@code ip -batch} of {@code rule add}/{@code rule del}
   * lines but with many requests per {@code sendmsg}: chunks are sized so the acknowledgements fit
   * the socket's receive buffer. Every request is acknowledged; a failed request is reported in
   * {@link BatchResult#failed()} with its typed error and does not stop the others (there is no
   * transaction: the kernel applies each request on its own).
   */
  public BatchResult<RuleChange> apply(List<RuleChange> changes) {
    return apply(changes, true);
  }

  /**
   * As {@link #apply(List)}; with {@code exclusive} false the adds go without NLM_F_EXCL, so the kernel
   * skips its duplicate scan (rule_exists walks every rule of the family once more per add) and never
   * answers EEXIST: an add of a rule that is already there makes a second copy. Only for adds the caller
   * knows to be absent (planned against a fresh dump or an exact kernel view).
   */
  public BatchResult<RuleChange> apply(List<RuleChange> changes, boolean exclusive) {
    List<RuleChange> in = List.copyOf(changes);
    int addFlags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | (exclusive ? NLM_F_EXCL : 0);
    return thread.call(() -> applyOnThread(in, addFlags));
  }

  private BatchResult<RuleChange> applyOnThread(List<RuleChange> changes, int addFlags) {
    NetlinkException[] errors = batchOnThread(changes, MAX_RULE_MESSAGE, (c, s) -> {
      if (c.op() == RuleChange.Op.ADD) {
        RuleCodec.encode(writer, RTM_NEWRULE, addFlags, s, c.rule());
      } else {
        RuleCodec.encode(writer, RTM_DELRULE, NLM_F_REQUEST | NLM_F_ACK, s, c.rule());
      }
    }, RtNetlink::describeChange);
    List<RuleChange> ok = new ArrayList<>();
    List<BatchResult.Failure<RuleChange>> failed = new ArrayList<>();
    for (int k = 0; k < changes.size(); k++) {
      if (errors[k] == null) {
        ok.add(changes.get(k));
      } else {
        failed.add(new BatchResult.Failure<>(changes.get(k), errors[k]));
      }
    }
    return new BatchResult<>(ok, failed);
  }

  /** Encodes one request of a batch with the given sequence number into {@link #writer}. */
  private interface BatchEncoder<C> {
    void encode(C change, int seq);
  }

  /**
   * Sends {@code changes} in chunks of requests (each at most {@code maxMessage} bytes encoded), every
   * one acknowledged; returns each request's error, null where it succeeded.
   */
  private <C> NetlinkException[] batchOnThread(List<C> changes, int maxMessage, BatchEncoder<C> encoder,
      Function<C, String> describeChange) {
    checkOpen();
    int n = changes.size();
    NetlinkException[] errors = new NetlinkException[n];
    boolean[] answered = new boolean[n];
    int i = 0;
    while (i < n) {
      writer.clear();
      int first = i;
      int firstSeq = seq + 1;
      while (i < n && i - first < maxMessagesPerChunk && writer.position() + maxMessage <= maxChunkBytes) {
        encoder.encode(changes.get(i), nextSeq());
        i++;
      }
      int count = i - first;
      socket.send(sendBuffer, writer.position());
      int pending = count;
      try {
        while (pending > 0) {
          int len = socket.receive(receiveBuffer);
          // Fast path without allocation: an ACK is read in place; only an error is fully parsed.
          int off = 0;
          while (off + NLMSG_HDRLEN <= len) {
            int mlen = receiveBuffer.getInt(off);
            if (mlen < NLMSG_HDRLEN || off + mlen > len) {
              throw new IllegalArgumentException("malformed netlink message at offset " + off + ": length " + mlen);
            }
            int type = Short.toUnsignedInt(receiveBuffer.getShort(off + 4));
            int k = receiveBuffer.getInt(off + 8) - firstSeq;
            if (type == NLMSG_ERROR && mlen >= NLMSG_HDRLEN + 4 && k >= 0 && k < count && !answered[first + k]) {
              answered[first + k] = true;
              pending--;
              int errno = -receiveBuffer.getInt(off + NLMSG_HDRLEN);
              if (errno != 0) {
                NetlinkMessage m = NetlinkMessage.parse(receiveBuffer.slice(off, mlen), mlen).get(0);
                errors[first + k] = NetlinkException.fromErrno(
                    errno, describeChange.apply(changes.get(first + k)), describe(), m.extendedAckMessage());
              }
            }
            off += NetlinkMessageWriter.align(mlen);
          }
        }
      } catch (NetlinkException e) {
        if (e.errno() != NetlinkSocket.ENOBUFS) {
          throw e;
        }
        // Acknowledgements were dropped: the outcome of the unanswered requests is unknown.
        LOG.log(System.Logger.Level.WARNING, "lost netlink acknowledgements in {0}: {1}", describe(), e.getMessage());
        for (int k = first; k < i; k++) {
          if (!answered[k]) {
            answered[k] = true;
            String what = describeChange.apply(changes.get(k));
            errors[k] = new NetlinkException(NetlinkSocket.ENOBUFS, what + " in "
                + describe() + ": outcome unknown, the acknowledgement was lost (ENOBUFS); list again", what);
          }
        }
      }
    }
    return errors;
  }

  private static String ruleCommand(IpFamily family) {
    return family == IpFamily.V6 ? "ip -6 rule" : "ip rule";
  }

  static String describeChange(RuleChange c) {
    return (c.op() == RuleChange.Op.ADD ? "add " : "delete ") + ruleCommand(c.rule().family()) + " '" + c.rule() + "'";
  }

  // --------------------------------------------------------------------------------------- routes

  /**
   * The routes of one table and family: {@code ip [-6] route show table N} (all route types; cache
   * clones are skipped). The kernel dumps every table; the table is filtered here on RTA_TABLE.
   */
  public List<Route> listRoutes(IpFamily family, int table) {
    return dump(
        "list " + (family == IpFamily.V6 ? "ip -6 route" : "ip route") + " table " + Integer.toUnsignedString(table),
        s -> RouteCodec.encodeDump(writer, s, family),
        m -> m.type() == RTM_NEWROUTE
            ? RouteCodec.decode(m.payload()).filter(r -> r.family() == family && r.table() == table)
            : Optional.empty());
  }

  /** {@code ip route add ...} (NLM_F_CREATE|NLM_F_EXCL): AlreadyExists on EEXIST. */
  public void addRoute(Route route) {
    request("add " + routeCommand(route) + " '" + route + "'",
        s -> RouteCodec.encode(writer, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, s, route));
  }

  /**
   * {@code ip route del ...}: the kernel matches destination and table exactly; type, protocol,
   * gateway/oif and metric only when given (scope is sent as "nowhere", i.e. any). NotFound on ESRCH.
   */
  public void deleteRoute(Route route) {
    request("delete " + routeCommand(route) + " '" + route + "'",
        s -> RouteCodec.encode(writer, RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK, s, route));
  }

  /**
   * Applies many route changes in order, like {@code ip -batch} of {@code route add}/{@code route del}
   * lines, chunked as {@link #apply} chunks rules; a failed request is reported in {@link
   * BatchResult#failed()} with its typed error and does not stop the others.
   */
  public BatchResult<RouteChange> applyRoutes(List<RouteChange> changes) {
    List<RouteChange> in = List.copyOf(changes);
    return thread.call(() -> {
      NetlinkException[] errors = batchOnThread(in, MAX_ROUTE_MESSAGE, (c, s) -> {
        if (c.op() == RouteChange.Op.ADD) {
          RouteCodec.encode(writer, RTM_NEWROUTE, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, s, c.route());
        } else {
          RouteCodec.encode(writer, RTM_DELROUTE, NLM_F_REQUEST | NLM_F_ACK, s, c.route());
        }
      }, c -> (c.op() == RouteChange.Op.ADD ? "add " : "delete ") + routeCommand(c.route()) + " '" + c.route() + "'");
      List<RouteChange> ok = new ArrayList<>();
      List<BatchResult.Failure<RouteChange>> failed = new ArrayList<>();
      for (int k = 0; k < in.size(); k++) {
        if (errors[k] == null) {
          ok.add(in.get(k));
        } else {
          failed.add(new BatchResult.Failure<>(in.get(k), errors[k]));
        }
      }
      return new BatchResult<>(ok, failed);
    });
  }

  /**
   * The routes of one type and protocol in every table of one family: {@code ip [-6] route show table
   * all type T proto P}. The kernel filters (since Linux 4.20, with strict checking, on a socket of its
   * own so no other request is judged strictly), so a node with large routing tables sends only these;
   * the result is filtered here too, for older kernels.
   */
  public List<Route> listRoutes(IpFamily family, RouteType type, int protocol) {
    String op = "list " + (family == IpFamily.V6 ? "ip -6 route" : "ip route") + " table all type "
        + type.name().toLowerCase(java.util.Locale.ROOT) + " proto " + protocol;
    return thread.call(() -> {
      checkOpen();
      if (filteringSocket == null) {
        NetlinkSocket s = openSocket(0, thread.describe());
        s.setOption(SOL_NETLINK, NETLINK_GET_STRICT_CHK, 1);
        filteringSocket = s;
      }
      return dumpOn(filteringSocket, op, s -> RouteCodec.encodeDump(writer, s, family, protocol, type.rtn()),
          m -> m.type() == RTM_NEWROUTE
              ? RouteCodec.decode(m.payload()).filter(r -> r.family() == family && r.type() == type && r.protocol() == protocol)
              : Optional.empty());
    });
  }

  /**
   * The routes of every table of one family: {@code ip [-6] route show table all} (cache clones
   * skipped), for a caller that looks at several tables with one dump.
   */
  public List<Route> listAllRoutes(IpFamily family) {
    return dump(
        "list " + (family == IpFamily.V6 ? "ip -6 route" : "ip route") + " table all",
        s -> RouteCodec.encodeDump(writer, s, family),
        m -> m.type() == RTM_NEWROUTE ? RouteCodec.decode(m.payload()).filter(r -> r.family() == family) : Optional.empty());
  }

  private static String routeCommand(Route r) {
    return r.family() == IpFamily.V6 ? "ip -6 route" : "ip route";
  }

  // ---------------------------------------------------------------------------------------- links

  /** {@code ip -d link show}: every device with its index, name, kind and VRF table. */
  public List<Link> listLinks() {
    return dump("list links (ip link show)", s -> LinkCodec.encodeDump(writer, s),
        m -> m.type() == RTM_NEWLINK ? Optional.of(LinkCodec.decode(m.payload())) : Optional.empty());
  }

  /** {@code net.ipv4.conf.<dev>.src_valid_mark} (IPV4_DEVCONF_SRC_VMARK). */
  public static final int IPV4_DEVCONF_SRC_VMARK = 24;

  /**
   * Sets {@code net.ipv4.conf.<device>.<setting>} through rtnetlink (RTM_SETLINK, IFLA_INET_CONF), which
   * needs CAP_NET_ADMIN only, not a writable /proc/sys.
   *
   * @param confId the IPV4_DEVCONF_* id, e.g. {@link #IPV4_DEVCONF_SRC_VMARK}
   * @throws NetlinkException.NotFound when the device is gone
   */
  public void setIpv4DeviceConf(int ifindex, int confId, int value) {
    request("set ipv4 devconf " + confId + "=" + value + " on ifindex " + ifindex,
        s -> LinkCodec.encodeSetIpv4Conf(writer, s, ifindex, confId, value));
  }

  /**
   * Creates a collect-metadata VXLAN device, up, then tags it with its alias (the kernel takes no alias
   * on creation), and returns it as listed.
   *
   * @throws NetlinkException.AlreadyExists when a device of that name exists (EEXIST)
   */
  public Link createVxlan(VxlanDevice device) {
    request("add ip link '" + device.name() + " type vxlan external" + (device.gpe() ? " gpe" : "") + " dstport "
        + device.port() + "'", s -> LinkCodec.encodeCreateVxlan(writer, s, device));
    Link created = listLinks().stream().filter(l -> l.name().equals(device.name())).findFirst()
        .orElseThrow(() -> new NetlinkException(NetlinkException.ENODEV, "the device " + device.name()
            + " created in " + describe() + " is gone again", "add ip link " + device.name()));
    setLink(created.index(), 0, true, Optional.of(device.alias()));
    return new Link(created.index(), created.name(), created.kind(), created.vrfTable(), Optional.of(device.alias()),
        created.mtu(), true, created.vxlan());
  }

  /** {@code ip link set dev #INDEX [mtu M] [alias A] up|down} (mtu 0, no alias: left as they are). */
  public void setLink(int index, int mtu, boolean up, Optional<String> alias) {
    request("set ip link #" + index + (mtu > 0 ? " mtu " + mtu : "") + alias.map(a -> " alias " + a).orElse("")
        + (up ? " up" : " down"), s -> LinkCodec.encodeSet(writer, s, index, mtu, up, alias));
  }

  /** {@code ip link del dev #INDEX}: NotFound (ENODEV) when there is no such device. */
  public void deleteLink(int index) {
    request("delete ip link #" + index, s -> LinkCodec.encodeDelete(writer, s, index));
  }

  // ------------------------------------------------------------------------------------ addresses

  /** {@code ip addr add ...}: AlreadyExists when the device has that address. */
  public void addAddress(Address address) {
    request("add ip addr '" + address + "'", s -> AddressCodec.encodeAdd(writer, s, address));
  }

  /** {@code ip addr show}: every IPv4 and IPv6 address on every device of the namespace. */
  public List<Address> listAddresses() {
    return dump("list addresses (ip addr show)", s -> AddressCodec.encodeDump(writer, s),
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
  public Subscription subscribe(Set<ChangeGroup> groups, Consumer<ChangeEvent> listener, Runnable onOverflow) {
    checkOpen();
    if (groups.isEmpty()) {
      throw new IllegalArgumentException("subscribe to at least one group");
    }
    Set<ChangeGroup> wanted = EnumSet.copyOf(groups);
    int mask = 0;
    for (ChangeGroup g : wanted) {
      mask |= g.bindMask();
    }
    int bindMask = mask;
    NetnsThread t = NetnsThread.enter(thread.netns());
    String description = "subscription to " + wanted + " in " + describe();
    NetlinkSocket s;
    try {
      s = t.call(() -> {
        NetlinkSocket sock = openSocket(bindMask, t.describe());
        sock.setReceiveTimeoutMillis(Subscription.POLL_MILLIS);
        return sock;
      });
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
    Subscription sub = new Subscription(t, description);
    t.submit(() -> listen(s, sub, wanted, listener, onOverflow));
    subscriptions.add(sub);
    return sub;
  }

  private static void listen(NetlinkSocket s, Subscription sub, Set<ChangeGroup> wanted,
      Consumer<ChangeEvent> listener, Runnable onOverflow) {
    ByteBuffer buf = ByteBuffer.allocateDirect(RECEIVE_BYTES);
    sub.runningOn(Thread.currentThread());
    try {
      while (!sub.closing()) {
        int len;
        try {
          len = s.receive(buf);
        } catch (NetlinkException e) {
          if (e.errno() == NetlinkSocket.ENOBUFS) {
            sub.countOverflow();
            runQuietly(onOverflow, sub);
            continue;
          }
          LOG.log(System.Logger.Level.ERROR, sub + " stopped: " + e.getMessage(), e);
          return;
        }
        if (len <= 0) {
          continue;
        }
        for (NetlinkMessage m : NetlinkMessage.parse(buf, len)) {
          Optional<ChangeEvent> ev;
          try {
            ev = toEvent(m);
          } catch (IllegalArgumentException e) {
            LOG.log(System.Logger.Level.WARNING, sub + ": undecodable message type " + m.type() + ": " + e.getMessage());
            continue;
          }
          if (ev.isPresent() && wanted.contains(ev.get().group()) && !sub.closing()) {
            sub.countDelivered();
            ChangeEvent e = ev.get();
            runQuietly(() -> listener.accept(e), sub);
          }
        }
      }
    } finally {
      s.close();
    }
  }

  private static void runQuietly(Runnable r, Subscription sub) {
    try {
      r.run();
    } catch (RuntimeException e) {
      LOG.log(System.Logger.Level.WARNING, sub + ": listener failed: " + e, e);
    }
  }

  static Optional<ChangeEvent> toEvent(NetlinkMessage m) {
    return switch (m.type()) {
      case RTM_NEWRULE -> RuleCodec.decode(m.payload()).map(r -> ChangeEvent.ofRule(ChangeKind.NEW, r));
      case RTM_DELRULE -> RuleCodec.decode(m.payload()).map(r -> ChangeEvent.ofRule(ChangeKind.DELETED, r));
      case RTM_NEWROUTE -> RouteCodec.decode(m.payload()).map(r -> ChangeEvent.ofRoute(ChangeKind.NEW, r));
      case RTM_DELROUTE -> RouteCodec.decode(m.payload()).map(r -> ChangeEvent.ofRoute(ChangeKind.DELETED, r));
      case RTM_NEWADDR -> AddressCodec.decode(m.payload()).map(a -> ChangeEvent.ofAddress(ChangeKind.NEW, a));
      case RTM_DELADDR -> AddressCodec.decode(m.payload()).map(a -> ChangeEvent.ofAddress(ChangeKind.DELETED, a));
      case RTM_NEWLINK -> Optional.of(ChangeEvent.ofLink(ChangeKind.NEW, LinkCodec.decode(m.payload())));
      case RTM_DELLINK -> Optional.of(ChangeEvent.ofLink(ChangeKind.DELETED, LinkCodec.decode(m.payload())));
      default -> Optional.empty();
    };
  }

  // ------------------------------------------------------------------------------------ plumbing

  /** Sends one request with NLM_F_ACK and waits for its acknowledgement, throwing its error. */
  private void request(String op, IntConsumer encode) {
    thread.call(() -> {
      checkOpen();
      writer.clear();
      int s = nextSeq();
      encode.accept(s);
      socket.send(sendBuffer, writer.position());
      while (true) {
        int len = socket.receive(receiveBuffer);
        for (NetlinkMessage m : NetlinkMessage.parse(receiveBuffer, len)) {
          if (m.seq() == s && m.type() == NLMSG_ERROR) {
            int errno = m.errorCode();
            if (errno == 0) {
              return null;
            }
            throw NetlinkException.fromErrno(errno, op, describe(), m.extendedAckMessage());
          }
        }
      }
    });
  }

  /** Runs a dump (NLM_F_DUMP) to NLMSG_DONE, retrying it when the kernel marks it interrupted. */
  private <T> List<T> dump(String op, IntConsumer encode, Function<NetlinkMessage, Optional<T>> decode) {
    return thread.call(() -> {
      checkOpen();
      return dumpOn(socket, op, encode, decode);
    });
  }

  /** {@link #dump} on the given socket; on the namespace's thread. */
  private <T> List<T> dumpOn(NetlinkSocket socket, String op, IntConsumer encode,
      Function<NetlinkMessage, Optional<T>> decode) {
    dumps.incrementAndGet();
    for (int attempt = 1; attempt <= DUMP_ATTEMPTS; attempt++) {
      writer.clear();
      int s = nextSeq();
      encode.accept(s);
      socket.send(sendBuffer, writer.position());
      List<T> out = new ArrayList<>();
      boolean interrupted = false;
      boolean done = false;
      while (!done) {
        int len = socket.receive(receiveBuffer);
        for (NetlinkMessage m : NetlinkMessage.parse(receiveBuffer, len)) {
          if (m.seq() != s) {
            continue;
          }
          if ((m.flags() & NLM_F_DUMP_INTR) != 0) {
            interrupted = true;
          }
          if (m.type() == NLMSG_DONE) {
            int err = m.payload().limit() >= 4 ? -m.payload().getInt(0) : 0;
            if (err == NetlinkSocket.EINTR) {
              interrupted = true;
            } else if (err != 0) {
              throw NetlinkException.fromErrno(err, op, describe());
            }
            done = true;
            break;
          }
          if (m.type() == NLMSG_ERROR) {
            int errno = m.errorCode();
            if (errno != 0) {
              throw NetlinkException.fromErrno(errno, op, describe(), m.extendedAckMessage());
            }
            continue;
          }
          decode.apply(m).ifPresent(out::add);
        }
      }
      if (!interrupted) {
        return out;
      }
      LOG.log(System.Logger.Level.DEBUG, "{0} in {1}: dump interrupted, retrying ({2})", op, describe(), attempt);
    }
    throw new NetlinkException(NetlinkSocket.EINTR,
        op + " in " + describe() + ": the dump was interrupted " + DUMP_ATTEMPTS + " times (the kernel state kept changing)", op);
  }

  /** Closes the socket, the subscriptions made through it, and the thread if this connection owns it. */
  @Override
  public void close() {
    if (closed) {
      return;
    }
    for (Subscription s : subscriptions) {
      s.close();
    }
    try {
      thread.call(() -> {
        closed = true;
        socket.close();
        if (filteringSocket != null) {
          filteringSocket.close();
        }
        return null;
      });
    } finally {
      if (ownsThread) {
        thread.close();
      }
    }
  }
}

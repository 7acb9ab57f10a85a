package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * rtnetlink change notifications ({@code ip monitor}): a socket bound to multicast groups, read on a thread of
 * its own, its messages decoded into {@link ChangeEvent}s. Apart from {@link RtNetlink}'s request/response
 * exchanges because it runs the other way: the kernel speaks first, on another socket and another thread.
 */
final class Notifications {
  private static final System.Logger LOG = System.getLogger(RtNetlink.class.getName());

  private Notifications() {}

  /**
   * Opens the group socket on a new thread in {@code home}'s namespace and starts delivering to {@code listener}
   * there (see {@link RtNetlink#subscribe(Set, Consumer, Runnable)}).
   */
  static Subscription subscribe(NetnsThread home, Set<ChangeGroup> groups, Consumer<ChangeEvent> listener,
      Runnable onOverflow) {
    if (groups.isEmpty()) {
      throw new IllegalArgumentException("subscribe to at least one group");
    }
    Set<ChangeGroup> wanted = EnumSet.copyOf(groups);
    int mask = 0;
    for (ChangeGroup g : wanted) {
      mask |= g.bindMask();
    }
    int bindMask = mask;
    NetnsThread t = NetnsThread.enter(home.netns());
    String description = "subscription to " + wanted + " in " + home.describe();
    NetlinkSocket s;
    try {
      s = t.call(() -> {
        NetlinkSocket sock = NetlinkChannel.openSocket(bindMask, t.describe());
        sock.setReceiveTimeoutMillis(Subscription.POLL_MILLIS);
        return sock;
      });
    } catch (RuntimeException e) {
      t.close();
      throw e;
    }
    Subscription sub = new Subscription(t, description);
    t.submit(() -> listen(s, sub, wanted, listener, onOverflow));
    return sub;
  }

  private static void listen(NetlinkSocket s, Subscription sub, Set<ChangeGroup> wanted,
      Consumer<ChangeEvent> listener, Runnable onOverflow) {
    ByteBuffer buf = ByteBuffer.allocateDirect(NetlinkChannel.RECEIVE_BYTES);
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

  /** The event a notification stands for; empty for message types no group delivers. */
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
}

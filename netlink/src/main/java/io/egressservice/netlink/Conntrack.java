package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.function.Predicate;

/**
 * The conntrack table of one namespace over ctnetlink: list its entries ({@code conntrack -L}), narrowed in the
 * kernel to one IPv4 source where it can, and delete entries one by one by their exact tuple ({@code conntrack -D}
 * with a full tuple). Each call runs on the namespace's thread with a NETLINK_NETFILTER socket of its own, 2 s to
 * each answer; the kernel's refusals come back as {@link ConntrackAnswer}s, a socket that cannot be opened as a
 * {@link NetlinkException}, a malformed answer as an {@link IllegalArgumentException}.
 *
 * <p>Which kernels take what: the dump and the delete by tuple and zone are as old as ctnetlink (2.6.14). The dump
 * narrowed to a source ({@code CTA_FILTER} on a dump) is Linux 5.8 (commit cb8aa9a3affb); an older kernel ignores
 * that attribute (it lies past the kernel's {@code CTA_MAX}, which nfnetlink's liberal parsing skips) and dumps the
 * whole table, so a caller keeps filtering what comes back. The kernel's IPv6 source filter is not offered: its
 * comparison is inverted ({@code !ipv6_addr_cmp} in {@code ctnetlink_filter_match_tuple}, 5.8 to at least 6.18), so
 * it returns every flow but that source's. Nor is the filtered delete ({@code IPCTNL_MSG_CT_DELETE} with {@code
 * CTA_FILTER}, as {@code conntrack -D -s}), which only Linux 6.12 accepts (commit 1ef7f50ccc6e; 5.14, 5.15, 6.1, 6.6
 * and 6.8 answer EINVAL).
 */
public final class Conntrack {
  private static final int MSG_NEW = 1 << 8; // NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_NEW (a dumped entry)
  private static final int MSG_GET = (1 << 8) | 1; // IPCTNL_MSG_CT_GET
  private static final int MSG_DELETE = (1 << 8) | 2; // IPCTNL_MSG_CT_DELETE
  private static final int CTA_TUPLE_ORIG = 1;
  private static final int CTA_TUPLE_REPLY = 2;
  private static final int CTA_IP_V4_SRC = 1;
  private static final int CTA_ZONE = 18;
  private static final int CTA_FILTER = 25;
  private static final int CTA_FILTER_ORIG_FLAGS = 1;
  private static final int CTA_FILTER_F_CTA_IP_SRC = 1;
  private static final int AF_UNSPEC = 0;
  private static final int AF_INET = 2;
  private static final int AF_INET6 = 10;
  private static final int DUMP_BUFFER = 1 << 17;

  private final NetnsThread thread;
  private final Function<String, ConntrackChannel> open;

  /** The table of the namespace {@code thread} lives in. */
  public Conntrack(NetnsThread thread) {
    this(thread, ConntrackChannel::kernel);
  }

  /** Talks through {@code open} (given a description of the namespace); for tests. */
  Conntrack(NetnsThread thread, Function<String, ConntrackChannel> open) {
    this.thread = thread;
    this.open = open;
  }

  /**
   * One dump of the entries of {@code families} (both: one walk of the whole table), those that {@code keep}
   * accepts; {@code conntrack -L [-f ipv6]}. {@code keep} runs on the namespace's thread as the answers arrive, so
   * that a large table is never held whole.
   */
  public ConntrackDump dump(Set<IpFamily> families, Predicate<ConntrackEntry> keep) {
    if (families.isEmpty()) {
      throw new IllegalArgumentException("a dump of no family");
    }
    int family = families.size() > 1 ? AF_UNSPEC : families.contains(IpFamily.V4) ? AF_INET : AF_INET6;
    return thread.call(() -> {
      try (ConntrackChannel c = open.apply(thread.describe())) {
        return dump(c, family, Optional.empty(), keep);
      }
    });
  }

  /**
   * One dump narrowed in the kernel to the entries whose original source is the IPv4 address {@code source}
   * ({@code conntrack -L -s}; Linux 5.8, see above: an older kernel dumps the whole table), those that {@code keep}
   * accepts. A kernel that does not take the form answers EINVAL or EOPNOTSUPP.
   */
  public ConntrackDump dumpFrom(IpPrefix source, Predicate<ConntrackEntry> keep) {
    if (source.family() != IpFamily.V4 || !source.isHost()) {
      throw new IllegalArgumentException("the kernel filters dumps by IPv4 host address only: " + source);
    }
    return thread.call(() -> {
      try (ConntrackChannel c = open.apply(thread.describe())) {
        return dump(c, AF_INET, Optional.of(source), keep);
      }
    });
  }

  /**
   * Deletes each entry {@code keys} names, in order, one request each; the kernel's answers in the same order (an
   * entry gone meanwhile is answered ENOENT: {@link ConntrackAnswer#gone()}).
   */
  public List<ConntrackAnswer> delete(List<ConntrackKey> keys) {
    if (keys.isEmpty()) {
      return List.of();
    }
    return thread.call(() -> {
      try (ConntrackChannel c = open.apply(thread.describe())) {
        List<ConntrackAnswer> answers = new ArrayList<>(keys.size());
        ByteBuffer out = ByteBuffer.allocateDirect(8192).order(ByteOrder.nativeOrder());
        int seq = 2;
        for (ConntrackKey key : keys) {
          answers.add(delete(c, out, key, seq++));
        }
        return List.copyOf(answers);
      }
    });
  }

  private static ConntrackAnswer delete(ConntrackChannel c, ByteBuffer out, ConntrackKey key, int seq) {
    out.clear();
    out.position(16);
    out.put((byte) (key.original().source().family() == IpFamily.V4 ? AF_INET : AF_INET6));
    out.put((byte) 0); // NFNETLINK_V0
    out.putShort((short) 0);
    ConntrackWire.attr(out, CTA_TUPLE_ORIG | NetlinkConstants.NLA_F_NESTED, key.original().attributes());
    if (key.zone() != 0) {
      // The kernel dumps no CTA_ZONE for the default zone, and a request without one means it.
      ConntrackWire.attr(out, CTA_ZONE, new byte[] {(byte) (key.zone() >>> 8), (byte) key.zone()});
    }
    c.send(out, ConntrackWire.header(out, MSG_DELETE, NetlinkConstants.NLM_F_REQUEST | NetlinkConstants.NLM_F_ACK,
        seq));
    out.clear();
    int n = c.receive(out);
    if (n >= 20 && out.getShort(4) == NetlinkConstants.NLMSG_ERROR) {
      int err = -out.getInt(16);
      return err == 0 ? ConntrackAnswer.DONE : ConntrackAnswer.refused(err);
    }
    return ConntrackAnswer.NO_ANSWER;
  }

  private static ConntrackDump dump(ConntrackChannel c, int family, Optional<IpPrefix> source,
      Predicate<ConntrackEntry> keep) {
    ByteBuffer buf = ByteBuffer.allocateDirect(DUMP_BUFFER).order(ByteOrder.nativeOrder());
    buf.position(16);
    buf.put((byte) family);
    buf.put((byte) 0); // NFNETLINK_V0
    buf.putShort((short) 0);
    if (source.isPresent()) {
      int orig = ConntrackWire.begin(buf, CTA_TUPLE_ORIG | NetlinkConstants.NLA_F_NESTED);
      int ip = ConntrackWire.begin(buf, ConntrackTuple.CTA_TUPLE_IP | NetlinkConstants.NLA_F_NESTED);
      ConntrackWire.attr(buf, CTA_IP_V4_SRC, source.get().addressBytes());
      ConntrackWire.end(buf, ip);
      ConntrackWire.end(buf, orig);
      int f = ConntrackWire.begin(buf, CTA_FILTER | NetlinkConstants.NLA_F_NESTED);
      ConntrackWire.attr(buf, CTA_FILTER_ORIG_FLAGS, ByteBuffer.allocate(4).order(ByteOrder.nativeOrder())
          .putInt(CTA_FILTER_F_CTA_IP_SRC).array());
      ConntrackWire.end(buf, f);
    }
    c.send(buf, ConntrackWire.header(buf, MSG_GET, NetlinkConstants.NLM_F_REQUEST | NetlinkConstants.NLM_F_DUMP, 1));
    List<ConntrackEntry> kept = new ArrayList<>();
    while (true) {
      buf.clear();
      int n = c.receive(buf);
      if (n < 0) {
        return ConntrackDump.failed(ConntrackAnswer.NO_ANSWER);
      }
      for (int off = 0; off + 16 <= n; ) {
        int mlen = buf.getInt(off);
        if (mlen < 16 || off + mlen > n) {
          throw new IllegalArgumentException("malformed conntrack dump message at offset " + off);
        }
        int type = Short.toUnsignedInt(buf.getShort(off + 4));
        if (type == NetlinkConstants.NLMSG_DONE) {
          return new ConntrackDump(kept, ConntrackAnswer.DONE);
        }
        if (type == NetlinkConstants.NLMSG_ERROR && mlen >= 20) {
          int err = -buf.getInt(off + 16);
          if (err != 0) {
            return ConntrackDump.failed(ConntrackAnswer.refused(err));
          }
        } else if (type == MSG_NEW && mlen >= 20) {
          entry(buf, off, mlen).filter(keep).ifPresent(kept::add);
        }
        off += NetlinkMessageWriter.align(mlen);
      }
    }
  }

  /** The entry at {@code off}; empty when it lacks a tuple or an address (or is malformed). */
  private static Optional<ConntrackEntry> entry(ByteBuffer b, int off, int mlen) {
    try {
      NetlinkAttributes attrs = NetlinkAttributes.parse(b, off + 20, off + mlen);
      Optional<ConntrackTuple> original = attrs.bytes(CTA_TUPLE_ORIG).flatMap(ConntrackTuple::parse);
      Optional<ConntrackTuple> reply = attrs.bytes(CTA_TUPLE_REPLY).flatMap(ConntrackTuple::parse);
      if (original.isEmpty() || reply.isEmpty()) {
        return Optional.empty();
      }
      int zone = attrs.bytes(CTA_ZONE).filter(z -> z.length == 2)
          .map(z -> (Byte.toUnsignedInt(z[0]) << 8) | Byte.toUnsignedInt(z[1])).orElse(0);
      return Optional.of(new ConntrackEntry(original.get(), reply.get(), zone));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }
}

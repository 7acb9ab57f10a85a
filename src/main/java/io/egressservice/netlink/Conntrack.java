package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Set;

/**
 * Deletes conntrack entries by original source address (ctnetlink {@code IPCTNL_MSG_CT_DELETE} with a
 * {@code CTA_FILTER} on the source, as {@code conntrack -D -s ADDR} does; Linux 6.3+). A flow's NAT is chosen by
 * its first packet and kept by its entry: when an endpoint's treatment changes (steered to a host, SNAT here,
 * held), its old flows must start over, or they keep leaving as before (a steered flow's identity SNAT would
 * carry the pod's own address out of the new host).
 */
public final class Conntrack {
  private static final int NETLINK_NETFILTER = 12;
  private static final int MSG_NEW = 1 << 8; // NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_NEW (a dumped entry)
  private static final int MSG_GET = (1 << 8) | 1; // IPCTNL_MSG_CT_GET
  private static final int MSG_DELETE = (1 << 8) | 2; // NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_DELETE
  private static final int CTA_ZONE = 18;
  private static final int DUMP_BUFFER = 1 << 17;
  private static final int CTA_TUPLE_ORIG = 1;
  private static final int CTA_TUPLE_IP = 1;
  private static final int CTA_IP_V4_SRC = 1;
  private static final int CTA_IP_V6_SRC = 3;
  private static final int CTA_FILTER = 25;
  private static final int CTA_FILTER_ORIG_FLAGS = 1;
  private static final int CTA_FILTER_FLAG_IP_SRC = 1;
  private static final int ENOENT = 2;

  private Conntrack() {}

  /**
   * Deletes every entry whose original source is one of {@code sources}, in the namespace of {@code thread}.
   * Up to {@value #FILTERED_DELETES_MAX} IPv4 sources go as one filtered delete each; more, or any IPv6 source, go
   * as one dump of the table and a delete per matching entry. The kernel's IPv6 source filter is not used: on
   * Linux 6.18 a filtered delete of one IPv6 source removes every other IPv6 flow and keeps that source's
   * (ConntrackNetnsTest). Each filtered delete walks the whole conntrack table in the kernel (about a
   * millisecond with the default 262,144 buckets), so a cold start or resync that restarts the flows of 50,000
   * endpoints would otherwise spend a minute of kernel time on a table that may hold none of them.
   *
   * @return the errors, one line each (empty when all went through)
   */
  public static List<String> deleteBySource(NetnsThread thread, Collection<IpPrefix> sources) {
    if (sources.isEmpty()) {
      return List.of();
    }
    return thread.call(() -> {
      List<String> errors = new ArrayList<>();
      try (NetlinkSocket s = NetlinkSocket.open(NETLINK_NETFILTER, 0, thread.describe())) {
        s.setReceiveTimeoutMillis(2000);
        if (sources.size() <= FILTERED_DELETES_MAX && sources.stream().allMatch(p -> p.family() == IpFamily.V4)) {
          filteredDeletes(s, sources, errors);
        } else {
          dumpAndDelete(s, Set.copyOf(sources), errors);
        }
      } catch (NetlinkException | IllegalStateException | IllegalArgumentException e) {
        errors.add("conntrack delete: " + e.getMessage());
      }
      return errors;
    });
  }

  /** Above this many sources, one dump of the table costs less than a filtered delete (a table walk) each. */
  static final int FILTERED_DELETES_MAX = 8;

  private static void filteredDeletes(NetlinkSocket s, Collection<IpPrefix> sources, List<String> errors) {
    ByteBuffer buf = ByteBuffer.allocateDirect(8192).order(ByteOrder.nativeOrder());
    int seq = 1;
    for (IpPrefix src : sources) {
      buf.clear();
      int len = request(buf, seq, src);
      s.send(buf, len);
      ackInto(s, buf, "conntrack delete of source " + src.addressText(), errors);
      seq++;
    }
  }

  private static void ackInto(NetlinkSocket s, ByteBuffer buf, String what, List<String> errors) {
    buf.clear();
    int n = s.receive(buf);
    if (n < 0) {
      errors.add(what + ": no answer within 2 s");
    } else if (n >= 20 && buf.getShort(4) == NetlinkConstants.NLMSG_ERROR) {
      int err = -buf.getInt(16);
      if (err != 0 && err != ENOENT) {
        errors.add(what + ": errno " + err);
      }
    }
  }

  /**
   * One dump of every entry (both families), then a delete by exact original tuple (and zone) of those whose
   * original source is in {@code sources}. An entry gone between the two is ENOENT, which is success.
   */
  private static void dumpAndDelete(NetlinkSocket s, Set<IpPrefix> sources, List<String> errors) {
    ByteBuffer buf = ByteBuffer.allocateDirect(DUMP_BUFFER).order(ByteOrder.nativeOrder());
    buf.position(16);
    buf.put((byte) 0); // AF_UNSPEC: every family
    buf.put((byte) 0);
    buf.putShort((short) 0);
    int len = header(buf, MSG_GET, NetlinkConstants.NLM_F_REQUEST | NetlinkConstants.NLM_F_DUMP, 1);
    s.send(buf, len);
    List<Matched> matched = new ArrayList<>();
    boolean done = false;
    while (!done) {
      buf.clear();
      int n = s.receive(buf);
      if (n < 0) {
        errors.add("conntrack dump: no answer within 2 s");
        return;
      }
      for (int off = 0; off + 16 <= n; ) {
        int mlen = buf.getInt(off);
        if (mlen < 16 || off + mlen > n) {
          throw new IllegalArgumentException("malformed conntrack dump message at offset " + off);
        }
        int type = Short.toUnsignedInt(buf.getShort(off + 4));
        if (type == NetlinkConstants.NLMSG_DONE) {
          done = true;
          break;
        }
        if (type == NetlinkConstants.NLMSG_ERROR) {
          int err = -buf.getInt(off + 16);
          if (err != 0) {
            errors.add("conntrack dump: errno " + err);
            return;
          }
        } else if (type == MSG_NEW && mlen >= 20) {
          Matched m = match(buf, off, mlen, sources);
          if (m != null) {
            matched.add(m);
          }
        }
        off += NetlinkMessageWriter.align(mlen);
      }
    }
    ByteBuffer out = ByteBuffer.allocateDirect(8192).order(ByteOrder.nativeOrder());
    int seq = 2;
    for (Matched m : matched) {
      out.clear();
      out.position(16);
      out.put(m.family());
      out.put((byte) 0); // NFNETLINK_V0
      out.putShort((short) 0);
      attr(out, CTA_TUPLE_ORIG | NetlinkConstants.NLA_F_NESTED, m.tuple());
      if (m.zone().isPresent()) {
        attr(out, CTA_ZONE, m.zone().get());
      }
      s.send(out, header(out, MSG_DELETE, NetlinkConstants.NLM_F_REQUEST | NetlinkConstants.NLM_F_ACK, seq++));
      ackInto(s, out, "conntrack delete of a flow from " + m.source().addressText(), errors);
    }
  }

  /** An entry to delete: its family, the payloads of its original tuple and zone as the kernel dumped them. */
  private record Matched(byte family, byte[] tuple, java.util.Optional<byte[]> zone, IpPrefix source) {}

  /** The entry at {@code off} when its original source is one of {@code sources}; null otherwise (or malformed). */
  private static Matched match(ByteBuffer b, int off, int mlen, Set<IpPrefix> sources) {
    try {
      NetlinkAttributes attrs = NetlinkAttributes.parse(b, off + 20, off + mlen);
      java.util.Optional<NetlinkAttributes> ip = attrs.nested(CTA_TUPLE_ORIG).flatMap(t -> t.nested(CTA_TUPLE_IP));
      java.util.Optional<byte[]> address = ip.flatMap(a -> a.bytes(CTA_IP_V4_SRC).filter(v -> v.length == 4)
          .or(() -> a.bytes(CTA_IP_V6_SRC).filter(v -> v.length == 16)));
      if (address.isEmpty()) {
        return null;
      }
      IpPrefix source = IpPrefix.host(address.get());
      if (!sources.contains(source)) {
        return null;
      }
      return new Matched(b.get(off + 16), attrs.bytes(CTA_TUPLE_ORIG).orElseThrow(), attrs.bytes(CTA_ZONE), source);
    } catch (IllegalArgumentException e) {
      return null;
    }
  }

  /** Writes the netlink header of the message that ends at {@code b}'s position; returns its length. */
  private static int header(ByteBuffer b, int type, int flags, int seq) {
    int len = b.position();
    b.putInt(0, len);
    b.putShort(4, (short) type);
    b.putShort(6, (short) flags);
    b.putInt(8, seq);
    b.putInt(12, 0);
    return len;
  }

  private static int request(ByteBuffer b, int seq, IpPrefix src) {
    boolean v4 = src.family() == IpFamily.V4;
    byte[] addr = src.addressBytes();
    b.position(16);
    b.put((byte) (v4 ? 2 : 10)); // nfgen_family
    b.put((byte) 1); // version: the family is meant
    b.putShort((short) 0); // res_id
    int orig = begin(b, CTA_TUPLE_ORIG | NetlinkConstants.NLA_F_NESTED);
    int ip = begin(b, CTA_TUPLE_IP | NetlinkConstants.NLA_F_NESTED);
    attr(b, v4 ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, addr);
    end(b, ip);
    end(b, orig);
    int filter = begin(b, CTA_FILTER | NetlinkConstants.NLA_F_NESTED);
    attr(b, CTA_FILTER_ORIG_FLAGS, intBytes(CTA_FILTER_FLAG_IP_SRC));
    end(b, filter);
    return header(b, MSG_DELETE, NetlinkConstants.NLM_F_REQUEST | NetlinkConstants.NLM_F_ACK, seq);
  }

  private static byte[] intBytes(int v) {
    return ByteBuffer.allocate(4).order(ByteOrder.nativeOrder()).putInt(v).array();
  }

  private static int begin(ByteBuffer b, int type) {
    int start = b.position();
    b.putShort((short) 0);
    b.putShort((short) type);
    return start;
  }

  private static void end(ByteBuffer b, int start) {
    b.putShort(start, (short) (b.position() - start));
  }

  private static void attr(ByteBuffer b, int type, byte[] value) {
    b.putShort((short) (4 + value.length));
    b.putShort((short) type);
    b.put(value);
    while ((b.position() & 3) != 0) {
      b.put((byte) 0);
    }
  }
}

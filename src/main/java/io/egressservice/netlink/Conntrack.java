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
  private static final int NLM_F_DUMP = 0x300;
  private static final int NLMSG_DONE = 3;
  private static final int NLA_TYPE_MASK = 0x3fff;
  private static final int CTA_ZONE = 18;
  private static final int DUMP_BUFFER = 1 << 17;
  private static final int NLM_F_REQUEST = 1;
  private static final int NLM_F_ACK = 4;
  private static final int NLMSG_ERROR = 2;
  private static final int NLA_F_NESTED = 0x8000;
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
    } else if (n >= 20 && buf.getShort(4) == NLMSG_ERROR) {
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
    int len = buf.position();
    buf.putInt(0, len);
    buf.putShort(4, (short) MSG_GET);
    buf.putShort(6, (short) (NLM_F_REQUEST | NLM_F_DUMP));
    buf.putInt(8, 1);
    buf.putInt(12, 0);
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
        if (type == NLMSG_DONE) {
          done = true;
          break;
        }
        if (type == NLMSG_ERROR) {
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
        off += (mlen + 3) & ~3;
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
      out.put(m.attributes());
      int l = out.position();
      out.putInt(0, l);
      out.putShort(4, (short) MSG_DELETE);
      out.putShort(6, (short) (NLM_F_REQUEST | NLM_F_ACK));
      out.putInt(8, seq++);
      out.putInt(12, 0);
      s.send(out, l);
      ackInto(s, out, "conntrack delete of a flow from " + m.source().addressText(), errors);
    }
  }

  /** An entry to delete: its family, its original tuple and zone attributes as the kernel dumped them. */
  private record Matched(byte family, byte[] attributes, IpPrefix source) {}

  /** The entry at {@code off} when its original source is one of {@code sources}; null otherwise. */
  private static Matched match(ByteBuffer b, int off, int mlen, Set<IpPrefix> sources) {
    byte family = b.get(off + 16);
    int end = off + mlen;
    int tupleStart = -1;
    int tupleLen = 0;
    int zoneStart = -1;
    int zoneLen = 0;
    for (int a = off + 20; a + 4 <= end; ) {
      int alen = Short.toUnsignedInt(b.getShort(a));
      if (alen < 4 || a + alen > end) {
        break;
      }
      int atype = b.getShort(a + 2) & NLA_TYPE_MASK;
      if (atype == CTA_TUPLE_ORIG) {
        tupleStart = a;
        tupleLen = alen;
      } else if (atype == CTA_ZONE) {
        zoneStart = a;
        zoneLen = alen;
      }
      a += (alen + 3) & ~3;
    }
    if (tupleStart < 0) {
      return null;
    }
    IpPrefix source = tupleSource(b, tupleStart + 4, tupleStart + tupleLen);
    if (source == null || !sources.contains(source)) {
      return null;
    }
    byte[] attrs = new byte[align(tupleLen) + (zoneStart < 0 ? 0 : align(zoneLen))];
    copy(b, tupleStart, tupleLen, attrs, 0);
    if (zoneStart >= 0) {
      copy(b, zoneStart, zoneLen, attrs, align(tupleLen));
    }
    return new Matched(family, attrs, source);
  }

  private static IpPrefix tupleSource(ByteBuffer b, int from, int end) {
    for (int a = from; a + 4 <= end; ) {
      int alen = Short.toUnsignedInt(b.getShort(a));
      if (alen < 4 || a + alen > end) {
        return null;
      }
      if ((b.getShort(a + 2) & NLA_TYPE_MASK) == CTA_TUPLE_IP) {
        for (int i = a + 4; i + 4 <= a + alen; ) {
          int ilen = Short.toUnsignedInt(b.getShort(i));
          if (ilen < 4 || i + ilen > a + alen) {
            return null;
          }
          int itype = b.getShort(i + 2) & NLA_TYPE_MASK;
          if ((itype == CTA_IP_V4_SRC && ilen == 8) || (itype == CTA_IP_V6_SRC && ilen == 20)) {
            byte[] addr = new byte[ilen - 4];
            for (int k = 0; k < addr.length; k++) {
              addr[k] = b.get(i + 4 + k);
            }
            return IpPrefix.host(addr);
          }
          i += (ilen + 3) & ~3;
        }
        return null;
      }
      a += (alen + 3) & ~3;
    }
    return null;
  }

  private static int align(int len) {
    return (len + 3) & ~3;
  }

  private static void copy(ByteBuffer b, int from, int len, byte[] to, int at) {
    for (int k = 0; k < len; k++) {
      to[at + k] = b.get(from + k);
    }
  }

  private static int request(ByteBuffer b, int seq, IpPrefix src) {
    boolean v4 = src.family() == IpFamily.V4;
    byte[] addr = src.addressBytes();
    b.position(16);
    b.put((byte) (v4 ? 2 : 10)); // nfgen_family
    b.put((byte) 1); // version: the family is meant
    b.putShort((short) 0); // res_id
    int orig = begin(b, CTA_TUPLE_ORIG | NLA_F_NESTED);
    int ip = begin(b, CTA_TUPLE_IP | NLA_F_NESTED);
    attr(b, v4 ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, addr);
    end(b, ip);
    end(b, orig);
    int filter = begin(b, CTA_FILTER | NLA_F_NESTED);
    attr(b, CTA_FILTER_ORIG_FLAGS, intBytes(CTA_FILTER_FLAG_IP_SRC));
    end(b, filter);
    int len = b.position();
    b.putInt(0, len);
    b.putShort(4, (short) MSG_DELETE);
    b.putShort(6, (short) (NLM_F_REQUEST | NLM_F_ACK));
    b.putInt(8, seq);
    b.putInt(12, 0);
    return len;
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

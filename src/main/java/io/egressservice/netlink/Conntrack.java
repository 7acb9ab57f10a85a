package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;

/**
 * Deletes conntrack entries by original source address (ctnetlink {@code IPCTNL_MSG_CT_DELETE} with a
 * {@code CTA_FILTER} on the source, as {@code conntrack -D -s ADDR} does; Linux 6.3+). A flow's NAT is chosen by
 * its first packet and kept by its entry: when an endpoint's treatment changes (steered to a host, SNAT here,
 * held), its old flows must start over, or they keep leaving as before (a steered flow's identity SNAT would
 * carry the pod's own address out of the new host).
 */
public final class Conntrack {
  private static final int NETLINK_NETFILTER = 12;
  private static final int MSG_DELETE = (1 << 8) | 2; // NFNL_SUBSYS_CTNETLINK, IPCTNL_MSG_CT_DELETE
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
        ByteBuffer buf = ByteBuffer.allocateDirect(8192).order(ByteOrder.nativeOrder());
        int seq = 1;
        for (IpPrefix src : sources) {
          buf.clear();
          int len = request(buf, seq, src);
          s.send(buf, len);
          buf.clear();
          int n = s.receive(buf);
          if (n >= 20 && buf.getShort(4) == NLMSG_ERROR) {
            int err = -buf.getInt(16);
            if (err != 0 && err != ENOENT) {
              errors.add("conntrack delete of source " + src.addressText() + ": errno " + err);
            }
          }
          seq++;
        }
      } catch (NetlinkException | IllegalStateException e) {
        errors.add("conntrack delete: " + e.getMessage());
      }
      return errors;
    });
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

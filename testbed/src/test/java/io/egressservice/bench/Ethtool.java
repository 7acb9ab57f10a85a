package io.egressservice.bench;

import com.sun.jna.LastErrorException;
import com.sun.jna.Native;
import com.sun.jna.Platform;
import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * Device features (what {@code ethtool -k} shows and {@code ethtool -K} sets) over ethtool's generic netlink
 * family ({@code ETHTOOL_MSG_FEATURES_GET} / {@code _SET}, kernel 5.6+): there is no ethtool binary on the bench
 * machines. Every call works in the namespace of the calling thread (run it on a {@code NetnsThread}).
 *
 * <p>Names are the kernel's feature names ({@code rx-gro}, {@code tx-udp_tnl-segmentation}, ...), not ethtool's
 * aliases ({@code gro}, {@code tso}): the aliases group several bits.
 */
final class Ethtool {
  private static final int AF_NETLINK = 16;
  private static final int NETLINK_GENERIC = 16;
  private static final int SOCK_RAW = 3;
  private static final int SOCK_CLOEXEC = 0x80000;
  private static final int NLM_F_REQUEST = 1;
  private static final int NLM_F_ACK = 4;
  private static final int NLM_F_DUMP = 0x300;
  private static final int NLM_F_MULTI = 2;
  private static final int NLMSG_ERROR = 2;
  private static final int NLMSG_DONE = 3;
  private static final int NLA_F_NESTED = 0x8000;
  private static final int GENL_ID_CTRL = 16;
  private static final int CTRL_CMD_GETFAMILY = 3;
  private static final int CTRL_ATTR_FAMILY_ID = 1;
  private static final int CTRL_ATTR_FAMILY_NAME = 2;
  private static final int ETHTOOL_MSG_FEATURES_GET = 11;
  private static final int ETHTOOL_MSG_FEATURES_SET = 12;
  private static final int ETHTOOL_A_FEATURES_HEADER = 1;
  private static final int ETHTOOL_A_FEATURES_WANTED = 3;
  private static final int ETHTOOL_A_FEATURES_ACTIVE = 4;
  private static final int ETHTOOL_A_HEADER_DEV_NAME = 2;
  private static final int ETHTOOL_A_HEADER_FLAGS = 3;
  /** ETHTOOL_FLAG_OMIT_REPLY: no FEATURES_SET_REPLY, only the ack. */
  private static final int ETHTOOL_FLAG_OMIT_REPLY = 2;
  private static final int ETHTOOL_A_BITSET_BITS = 3;
  private static final int ETHTOOL_A_BITSET_BITS_BIT = 1;
  private static final int ETHTOOL_A_BITSET_BIT_NAME = 2;
  private static final int ETHTOOL_A_BITSET_BIT_VALUE = 3;

  private static final class C {
    static {
      Native.register(C.class, Platform.C_LIBRARY_NAME);
    }

    static native int socket(int domain, int type, int protocol) throws LastErrorException;

    static native long send(int fd, byte[] buf, long len, int flags) throws LastErrorException;

    static native long recv(int fd, byte[] buf, long len, int flags) throws LastErrorException;

    static native int close(int fd);
  }

  private Ethtool() {}

  /** Every device of the thread's namespace with its active features (the set bits of ETHTOOL_A_FEATURES_ACTIVE). */
  static Map<String, Set<String>> activeFeatures() {
    int fd = C.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    try {
      int family = familyId(fd);
      Msg m = new Msg(family, NLM_F_REQUEST | NLM_F_DUMP, ETHTOOL_MSG_FEATURES_GET);
      int h = m.begin(ETHTOOL_A_FEATURES_HEADER);
      m.end(h);
      send(fd, m);
      Map<String, Set<String>> out = new TreeMap<>();
      receive(fd, "FEATURES_GET", (type, payload) -> {
        String dev = null;
        Set<String> active = new TreeSet<>();
        for (Attr a : attrs(payload, 4, payload.limit())) {
          if (a.type() == ETHTOOL_A_FEATURES_HEADER) {
            for (Attr b : attrs(payload, a.start(), a.end())) {
              if (b.type() == ETHTOOL_A_HEADER_DEV_NAME) {
                dev = b.string(payload);
              }
            }
          } else if (a.type() == ETHTOOL_A_FEATURES_ACTIVE) {
            active.addAll(setBits(payload, a));
          }
        }
        if (dev != null) {
          out.put(dev, active);
        }
      });
      return out;
    } finally {
      C.close(fd);
    }
  }

  /** {@code ethtool -K dev name on|off ...}: the listed bits only (a bitset with a mask); throws if refused. */
  static void set(String dev, Map<String, Boolean> features) {
    int fd = C.socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_GENERIC);
    try {
      Msg m = new Msg(familyId(fd), NLM_F_REQUEST | NLM_F_ACK, ETHTOOL_MSG_FEATURES_SET);
      int h = m.begin(ETHTOOL_A_FEATURES_HEADER);
      m.string(ETHTOOL_A_HEADER_DEV_NAME, dev);
      m.u32(ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_OMIT_REPLY);
      m.end(h);
      int w = m.begin(ETHTOOL_A_FEATURES_WANTED);
      int bits = m.begin(ETHTOOL_A_BITSET_BITS);
      features.forEach((name, on) -> {
        int bit = m.begin(ETHTOOL_A_BITSET_BITS_BIT);
        m.string(ETHTOOL_A_BITSET_BIT_NAME, name);
        if (on) {
          m.flag(ETHTOOL_A_BITSET_BIT_VALUE);
        }
        m.end(bit);
      });
      m.end(bits);
      m.end(w);
      send(fd, m);
      receive(fd, "FEATURES_SET " + features + " on " + dev, (type, payload) -> {});
    } finally {
      C.close(fd);
    }
  }

  private static int familyId(int fd) {
    Msg m = new Msg(GENL_ID_CTRL, NLM_F_REQUEST, CTRL_CMD_GETFAMILY);
    m.string(CTRL_ATTR_FAMILY_NAME, "ethtool");
    send(fd, m);
    int[] id = {-1};
    receive(fd, "family lookup", (type, payload) -> {
      for (Attr a : attrs(payload, 4, payload.limit())) {
        if (a.type() == CTRL_ATTR_FAMILY_ID) {
          id[0] = Short.toUnsignedInt(payload.getShort(a.start()));
        }
      }
    });
    if (id[0] < 0) {
      throw new IllegalStateException("no generic netlink family 'ethtool' (kernel before 5.6?)");
    }
    return id[0];
  }

  private static Set<String> setBits(ByteBuffer p, Attr bitset) {
    Set<String> names = new TreeSet<>();
    for (Attr a : attrs(p, bitset.start(), bitset.end())) {
      if (a.type() != ETHTOOL_A_BITSET_BITS) {
        continue;
      }
      for (Attr bit : attrs(p, a.start(), a.end())) {
        // without a mask the kernel lists only the set bits, each with its name
        for (Attr f : attrs(p, bit.start(), bit.end())) {
          if (f.type() == ETHTOOL_A_BITSET_BIT_NAME) {
            names.add(f.string(p));
          }
        }
      }
    }
    return names;
  }

  interface Handler {
    void message(int type, ByteBuffer payload);
  }

  private static void send(int fd, Msg m) {
    byte[] b = m.bytes();
    C.send(fd, b, b.length, 0);
  }

  /** Reads until the dump's DONE or the request's ack (or its reply when no ack was asked for). */
  private static void receive(int fd, String what, Handler h) {
    byte[] buf = new byte[64 * 1024];
    while (true) {
      int n = (int) C.recv(fd, buf, buf.length, 0);
      ByteBuffer b = ByteBuffer.wrap(buf, 0, n).order(ByteOrder.nativeOrder());
      int off = 0;
      while (off + 16 <= n) {
        int len = b.getInt(off);
        int type = Short.toUnsignedInt(b.getShort(off + 4));
        int flags = Short.toUnsignedInt(b.getShort(off + 6));
        if (type == NLMSG_DONE) {
          return;
        }
        if (type == NLMSG_ERROR) {
          int errno = -b.getInt(off + 16);
          if (errno != 0) {
            throw new IllegalStateException("ethtool netlink: " + what + " refused, errno " + errno);
          }
          return;
        }
        ByteBuffer payload = ByteBuffer.wrap(buf, off + 16, len - 16).slice().order(ByteOrder.nativeOrder());
        h.message(type, payload);
        if ((flags & NLM_F_MULTI) == 0) {
          return; // a single reply (the family's); a dump ends with DONE, a request with an ack with its ack
        }
        off += (len + 3) & ~3;
      }
    }
  }

  record Attr(int type, int start, int end) {
    String string(ByteBuffer p) {
      int e = end;
      while (e > start && p.get(e - 1) == 0) {
        e--;
      }
      byte[] s = new byte[e - start];
      p.get(start, s);
      return new String(s, StandardCharsets.UTF_8);
    }
  }

  private static java.util.List<Attr> attrs(ByteBuffer p, int from, int to) {
    java.util.List<Attr> out = new java.util.ArrayList<>();
    int off = from;
    while (off + 4 <= to) {
      int len = Short.toUnsignedInt(p.getShort(off));
      int type = Short.toUnsignedInt(p.getShort(off + 2)) & 0x3fff;
      if (len < 4 || off + len > to) {
        break;
      }
      out.add(new Attr(type, off + 4, off + len));
      off += (len + 3) & ~3;
    }
    return out;
  }

  /** One generic netlink request: nlmsghdr, genlmsghdr (cmd, version 1), attributes. */
  private static final class Msg {
    private final ByteArrayOutputStream out = new ByteArrayOutputStream();
    private final ByteBuffer buf = ByteBuffer.allocate(4096).order(ByteOrder.nativeOrder());

    Msg(int type, int flags, int cmd) {
      buf.putInt(0).putShort((short) type).putShort((short) flags).putInt(1).putInt(0);
      buf.put((byte) cmd).put((byte) 1).putShort((short) 0);
    }

    int begin(int type) {
      int at = buf.position();
      buf.putShort((short) 0).putShort((short) (type | NLA_F_NESTED));
      return at;
    }

    void end(int at) {
      buf.putShort(at, (short) (buf.position() - at));
    }

    void string(int type, String s) {
      byte[] b = (s + "\0").getBytes(StandardCharsets.UTF_8);
      buf.putShort((short) (4 + b.length)).putShort((short) type).put(b);
      pad();
    }

    void u32(int type, int v) {
      buf.putShort((short) 8).putShort((short) type).putInt(v);
    }

    void flag(int type) {
      buf.putShort((short) 4).putShort((short) type);
    }

    private void pad() {
      while (buf.position() % 4 != 0) {
        buf.put((byte) 0);
      }
    }

    byte[] bytes() {
      buf.putInt(0, buf.position());
      out.write(buf.array(), 0, buf.position());
      return out.toByteArray();
    }
  }
}

package io.egressservice.netlink;

import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;

/**
 * A rule attribute (FRA_*) that {@link Rule} has no field of its own for, kept as the kernel sent it:
 * the selectors the agent never writes (ipproto, sport/dport ranges, uidrange, l3mdev, tun_id, realms,
 * suppress_ifgroup) and whatever a newer kernel adds (dscp, flowlabel, port masks). A rule carrying one
 * is never equal to a rule built without it, and a delete request repeats it, so the kernel deletes
 * exactly that rule and not another one at the same priority.
 */
public record RuleAttribute(int type, byte[] value) implements Comparable<RuleAttribute> {
  public RuleAttribute {
    if (type <= 0 || type > NetlinkConstants.NLA_TYPE_MASK) {
      throw new IllegalArgumentException("attribute type " + type + " is out of range");
    }
    value = Objects.requireNonNull(value, "value").clone();
  }

  @Override
  public byte[] value() {
    return value.clone();
  }

  byte[] valueUnsafe() {
    return value;
  }

  /** {@code ip rule show} prints suppress_ifgroup and realms after the action, the others before it. */
  boolean printsAfterAction() {
    return type == NetlinkConstants.FRA_SUPPRESS_IFGROUP || type == NetlinkConstants.FRA_FLOW;
  }

  /** {@link #printRank} of sport, which is a field of {@link Rule}: it prints between ipproto and dport. */
  static final int SPORT_RANK = 2;

  /** Where {@code ip rule show} prints it among the others: uidrange, ipproto, sport, dport, tun_id, the rest. */
  int printRank() {
    return switch (type) {
      case NetlinkConstants.FRA_UID_RANGE -> 0;
      case NetlinkConstants.FRA_IP_PROTO -> 1;
      case NetlinkConstants.FRA_SPORT_RANGE -> 2;
      case NetlinkConstants.FRA_DPORT_RANGE -> 3;
      case NetlinkConstants.FRA_TUN_ID -> 4;
      case NetlinkConstants.FRA_SUPPRESS_IFGROUP -> 5;
      case NetlinkConstants.FRA_FLOW -> 6;
      default -> 7 + type;
    };
  }

  boolean isL3mdev() {
    return type == NetlinkConstants.FRA_L3MDEV && value.length >= 1 && value[0] != 0;
  }

  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof RuleAttribute a && type == a.type && Arrays.equals(value, a.value);
  }

  @Override
  public int hashCode() {
    return 31 * type + Arrays.hashCode(value);
  }

  @Override
  public int compareTo(RuleAttribute o) {
    int c = Integer.compare(type, o.type);
    return c != 0 ? c : Arrays.compare(value, o.value);
  }

  /**
   * Like {@code ip rule show} where iproute2 knows the attribute, else {@code attr<type> 0x<bytes>}; empty
   * for what iproute2 does not print (a port's full mask).
   */
  @Override
  public String toString() {
    java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(value).order(java.nio.ByteOrder.nativeOrder());
    int n = value.length;
    if (type == NetlinkConstants.FRA_IP_PROTO && n >= 1) {
      return "ipproto " + ipProtoName(Byte.toUnsignedInt(value[0]));
    }
    if ((type == NetlinkConstants.FRA_SPORT_RANGE || type == NetlinkConstants.FRA_DPORT_RANGE) && n >= 4) {
      return (type == NetlinkConstants.FRA_SPORT_RANGE ? "sport " : "dport ")
          + range(b.getShort(0) & 0xffff, b.getShort(2) & 0xffff);
    }
    if (type == NetlinkConstants.FRA_UID_RANGE && n >= 8) {
      return "uidrange " + Integer.toUnsignedString(b.getInt(0)) + "-" + Integer.toUnsignedString(b.getInt(4));
    }
    if ((type == NetlinkConstants.FRA_SPORT_MASK || type == NetlinkConstants.FRA_DPORT_MASK) && n >= 2) {
      int mask = b.getShort(0) & 0xffff; // the kernel reports the full mask of a single port: iproute2 omits it
      return mask == 0xffff ? "" : (type == NetlinkConstants.FRA_SPORT_MASK ? "sport_mask 0x" : "dport_mask 0x")
          + Integer.toHexString(mask);
    }
    if (type == NetlinkConstants.FRA_L3MDEV) {
      return "l3mdev";
    }
    if (type == NetlinkConstants.FRA_FLOW && n >= 4) {
      return "realms " + Integer.toUnsignedString(b.getInt(0));
    }
    if (type == NetlinkConstants.FRA_SUPPRESS_IFGROUP && n >= 4) {
      return "suppress_ifgroup " + b.getInt(0);
    }
    if (type == NetlinkConstants.FRA_TUN_ID && n >= 8) {
      return "tun_id " + Long.toUnsignedString(java.nio.ByteBuffer.wrap(value).getLong(0)); // big endian on the wire
    }
    return "attr" + type + " 0x" + HexFormat.of().formatHex(value);
  }

  private static String range(int start, int end) {
    return start == end ? Integer.toString(start) : start + "-" + end;
  }

  private static String ipProtoName(int p) {
    return switch (p) {
      case 1 -> "icmp";
      case 6 -> "tcp";
      case 17 -> "udp";
      case 58 -> "ipv6-icmp";
      case 132 -> "sctp";
      default -> Integer.toString(p);
    };
  }
}

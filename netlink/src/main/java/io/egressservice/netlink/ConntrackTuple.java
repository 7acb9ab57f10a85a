package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Optional;

/**
 * One direction of a conntrack entry ({@code CTA_TUPLE_ORIG} or {@code CTA_TUPLE_REPLY}): addresses, protocol and
 * ports. It keeps the tuple's attributes as the kernel dumped them and sends them back verbatim to name the entry
 * (ICMP ids, a direction's zone and whatever a protocol adds need no decoding here). Two tuples are equal when those
 * bytes are; {@link #of} writes them as Linux 5.2 and later dump them. Not a record: its identity is an array.
 */
public final class ConntrackTuple {
  static final int CTA_TUPLE_IP = 1;
  static final int CTA_TUPLE_PROTO = 2;
  private static final int CTA_IP_V4_SRC = 1;
  private static final int CTA_IP_V4_DST = 2;
  private static final int CTA_IP_V6_SRC = 3;
  private static final int CTA_IP_V6_DST = 4;
  private static final int CTA_PROTO_NUM = 1;
  private static final int CTA_PROTO_SRC_PORT = 2;
  private static final int CTA_PROTO_DST_PORT = 3;

  private final IpPrefix source;
  private final IpPrefix destination;
  private final byte[] attributes;

  private ConntrackTuple(IpPrefix source, IpPrefix destination, byte[] attributes) {
    this.source = source;
    this.destination = destination;
    this.attributes = attributes;
  }

  /**
   * A TCP, UDP, SCTP, DCCP or UDP-Lite tuple (a protocol keyed by ports), as {@code conntrack -L} prints it:
   * {@code of(17, 10.0.0.5, 40000, 192.0.2.10, 7000)} is {@code udp src=10.0.0.5 dst=192.0.2.10 sport=40000
   * dport=7000}.
   */
  public static ConntrackTuple of(int protocol, IpPrefix source, int sourcePort, IpPrefix destination,
      int destinationPort) {
    if (!source.isHost() || !destination.isHost() || source.family() != destination.family()) {
      throw new IllegalArgumentException("a tuple joins two host addresses of one family: " + source + " > "
          + destination);
    }
    if (protocol < 0 || protocol > 255 || (sourcePort & ~0xffff) != 0 || (destinationPort & ~0xffff) != 0) {
      throw new IllegalArgumentException("protocol " + protocol + " or ports " + sourcePort + ", " + destinationPort
          + " out of range");
    }
    boolean v4 = source.family() == IpFamily.V4;
    ByteBuffer b = ByteBuffer.allocate(128).order(ByteOrder.nativeOrder());
    int ip = ConntrackWire.begin(b, CTA_TUPLE_IP | NetlinkConstants.NLA_F_NESTED);
    ConntrackWire.attr(b, v4 ? CTA_IP_V4_SRC : CTA_IP_V6_SRC, source.addressBytes());
    ConntrackWire.attr(b, v4 ? CTA_IP_V4_DST : CTA_IP_V6_DST, destination.addressBytes());
    ConntrackWire.end(b, ip);
    int proto = ConntrackWire.begin(b, CTA_TUPLE_PROTO | NetlinkConstants.NLA_F_NESTED);
    ConntrackWire.attr(b, CTA_PROTO_NUM, new byte[] {(byte) protocol});
    ConntrackWire.attr(b, CTA_PROTO_SRC_PORT, be16(sourcePort));
    ConntrackWire.attr(b, CTA_PROTO_DST_PORT, be16(destinationPort));
    ConntrackWire.end(b, proto);
    return new ConntrackTuple(source, destination, Arrays.copyOf(b.array(), b.position()));
  }

  /** The tuple whose attributes the kernel dumped; empty when they carry no pair of addresses. */
  static Optional<ConntrackTuple> parse(byte[] attributes) {
    Optional<NetlinkAttributes> ip = NetlinkAttributes.parse(ByteBuffer.wrap(attributes), 0, attributes.length)
        .nested(CTA_TUPLE_IP);
    if (ip.isEmpty()) {
      return Optional.empty();
    }
    Optional<IpPrefix> source = address(ip.get(), CTA_IP_V4_SRC, CTA_IP_V6_SRC);
    Optional<IpPrefix> destination = address(ip.get(), CTA_IP_V4_DST, CTA_IP_V6_DST);
    if (source.isEmpty() || destination.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new ConntrackTuple(source.get(), destination.get(), attributes));
  }

  public IpPrefix source() {
    return source;
  }

  public IpPrefix destination() {
    return destination;
  }

  /** The IP protocol number ({@code CTA_PROTO_NUM}; 0 when the kernel gave none). */
  public int protocol() {
    return proto().flatMap(p -> p.bytes(CTA_PROTO_NUM)).filter(v -> v.length == 1)
        .map(v -> Byte.toUnsignedInt(v[0])).orElse(0);
  }

  /** The source port (0 for a protocol without ports). */
  public int sourcePort() {
    return port(CTA_PROTO_SRC_PORT);
  }

  /** The destination port (0 for a protocol without ports). */
  public int destinationPort() {
    return port(CTA_PROTO_DST_PORT);
  }

  /** The attributes as dumped, to send back. */
  byte[] attributes() {
    return attributes;
  }

  private Optional<NetlinkAttributes> proto() {
    return NetlinkAttributes.parse(ByteBuffer.wrap(attributes), 0, attributes.length).nested(CTA_TUPLE_PROTO);
  }

  private int port(int type) {
    return proto().flatMap(p -> p.bytes(type)).filter(v -> v.length == 2)
        .map(v -> (Byte.toUnsignedInt(v[0]) << 8) | Byte.toUnsignedInt(v[1])).orElse(0);
  }

  private static byte[] be16(int value) {
    return new byte[] {(byte) (value >>> 8), (byte) value};
  }

  private static Optional<IpPrefix> address(NetlinkAttributes ip, int v4, int v6) {
    return ip.bytes(v4).filter(v -> v.length == 4).or(() -> ip.bytes(v6).filter(v -> v.length == 16))
        .map(IpPrefix::host);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof ConntrackTuple t && Arrays.equals(attributes, t.attributes);
  }

  @Override
  public int hashCode() {
    return Arrays.hashCode(attributes);
  }

  /** As {@code conntrack -L} shows it: {@code udp 10.0.0.5:40000 > 192.0.2.10:7000}. */
  @Override
  public String toString() {
    String name = switch (protocol()) {
      case 1 -> "icmp";
      case 6 -> "tcp";
      case 17 -> "udp";
      case 58 -> "icmpv6";
      case 132 -> "sctp";
      default -> "proto " + protocol();
    };
    return name + " " + endpoint(source, sourcePort()) + " > " + endpoint(destination, destinationPort());
  }

  private static String endpoint(IpPrefix address, int port) {
    String text = address.family() == IpFamily.V6 ? "[" + address.addressText() + "]" : address.addressText();
    return text + ":" + port;
  }
}

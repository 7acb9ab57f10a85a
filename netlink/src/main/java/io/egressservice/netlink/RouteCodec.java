package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * {@link Route} to and from RTM_NEWROUTE / RTM_DELROUTE: {@code struct rtmsg} (family, dst_len,
 * src_len, tos, table, protocol, scope, type: u8 each; flags: u32) then RTA_* attributes.
 */
final class RouteCodec {
  private RouteCodec() {}

  static void encode(NetlinkMessageWriter w, int type, int flags, int seq, Route r) {
    boolean delete = type == RTM_DELROUTE;
    int scope;
    if (delete) {
      scope = RT_SCOPE_NOWHERE; // "any scope" for the kernel's delete matching, as iproute2 sends it
    } else if (r.type() == RouteType.LOCAL) {
      scope = RT_SCOPE_HOST;
    } else if ((r.type() == RouteType.UNICAST && r.gateway().isEmpty()) || r.type() == RouteType.BROADCAST) {
      scope = RT_SCOPE_LINK;
    } else {
      scope = RT_SCOPE_UNIVERSE;
    }
    boolean smallTable = Integer.compareUnsigned(r.table(), 256) < 0;
    w.begin(type, flags, seq);
    w.u8(r.family().addressFamily())
        .u8(r.destination().map(IpPrefix::length).orElse(0))
        .u8(0)
        .u8(0)
        .u8(smallTable ? r.table() : RT_TABLE_UNSPEC)
        .u8(r.protocol())
        .u8(scope)
        .u8(r.type().rtn())
        .u32(0);
    w.attrU32(RTA_TABLE, r.table());
    r.destination().ifPresent(d -> w.attrBytes(RTA_DST, d.addressBytes()));
    r.gateway().ifPresent(g -> w.attrBytes(RTA_GATEWAY, g.addressBytes()));
    r.oif().ifPresent(i -> w.attrU32(RTA_OIF, i));
    r.metric().ifPresent(m -> w.attrU32(RTA_PRIORITY, m));
    r.encap().ifPresent(e -> encodeEncap(w, e));
    w.end();
  }

  private static void encodeEncap(NetlinkMessageWriter w, RouteEncap e) {
    w.attrU16(RTA_ENCAP_TYPE, e.family() == IpFamily.V4 ? LWTUNNEL_ENCAP_IP : LWTUNNEL_ENCAP_IP6);
    int nest = w.beginNested(RTA_ENCAP);
    w.attrBe64(LWTUNNEL_IP_ID, e.id());
    w.attrBytes(LWTUNNEL_IP_DST, e.destination().addressBytes());
    if (e.checksum()) {
      w.attrBe16(LWTUNNEL_IP_FLAGS, TUNNEL_CSUM);
    }
    w.endNested(nest);
  }

  /** LWTUNNEL_ENCAP_IP / _IP6 with a destination; other encapsulations (MPLS, seg6, BPF, ...) are not modelled. */
  private static Optional<RouteEncap> decodeEncap(NetlinkAttributes a) {
    Optional<byte[]> type = a.bytes(RTA_ENCAP_TYPE).filter(b -> b.length >= 2);
    Optional<NetlinkAttributes> nested = a.nested(RTA_ENCAP);
    if (type.isEmpty() || nested.isEmpty()) {
      return Optional.empty();
    }
    int t = java.nio.ByteBuffer.wrap(type.get()).order(java.nio.ByteOrder.nativeOrder()).getShort() & 0xffff;
    IpFamily outer = t == LWTUNNEL_ENCAP_IP ? IpFamily.V4 : t == LWTUNNEL_ENCAP_IP6 ? IpFamily.V6 : null;
    if (outer == null) {
      return Optional.empty();
    }
    NetlinkAttributes e = nested.get();
    Optional<byte[]> dst = e.bytes(LWTUNNEL_IP_DST).filter(b -> b.length == outer.byteLength());
    if (dst.isEmpty()) {
      return Optional.empty();
    }
    long id = 0;
    byte[] idBytes = e.bytes(LWTUNNEL_IP_ID).filter(b -> b.length == 8).orElse(new byte[8]);
    for (byte b : idBytes) {
      id = (id << 8) | (b & 0xff);
    }
    boolean csum = e.bytes(LWTUNNEL_IP_FLAGS).filter(b -> b.length == 2)
        .map(b -> ((((b[0] & 0xff) << 8) | (b[1] & 0xff)) & TUNNEL_CSUM) != 0).orElse(false);
    return Optional.of(new RouteEncap(IpPrefix.host(dst.get()), id, csum));
  }

  static void encodeDump(NetlinkMessageWriter w, int seq, IpFamily family) {
    encodeDump(w, seq, family, 0, 0);
  }

  /**
   * A dump of every table; on a socket with NETLINK_GET_STRICT_CHK the kernel sends only the routes of
   * this protocol and type (0: any), others ignore the filter (the caller filters again).
   */
  static void encodeDump(NetlinkMessageWriter w, int seq, IpFamily family, int protocol, int rtn) {
    w.begin(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq);
    w.u8(family.addressFamily()).u8(0).u8(0).u8(0).u8(0).u8(protocol).u8(0).u8(rtn).u32(0);
    w.end();
  }

  /**
   * A dump of one table (RTA_TABLE, so any id); on a socket with NETLINK_GET_STRICT_CHK (Linux 4.20+) the kernel
   * sends only that table's routes, and answers ENOENT when the table does not exist; other kernels ignore the
   * filter and dump every table (the caller filters again).
   */
  static void encodeTableDump(NetlinkMessageWriter w, int seq, IpFamily family, int table) {
    w.begin(RTM_GETROUTE, NLM_F_REQUEST | NLM_F_DUMP, seq);
    w.u8(family.addressFamily()).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u32(0);
    w.attrU32(RTA_TABLE, table);
    w.end();
  }

  /** Decodes an RTM_NEWROUTE / RTM_DELROUTE payload; empty for cloned (cache) routes and other families. */
  static Optional<Route> decode(ByteBuffer p) {
    if (p.limit() < RTMSG_LEN) {
      throw new IllegalArgumentException("short rtmsg: " + p.limit() + " bytes");
    }
    int af = Byte.toUnsignedInt(p.get(0));
    if (af != IpFamily.V4.addressFamily() && af != IpFamily.V6.addressFamily()) {
      return Optional.empty();
    }
    if ((p.getInt(8) & RTM_F_CLONED) != 0) {
      return Optional.empty();
    }
    IpFamily family = IpFamily.fromAddressFamily(af);
    int dstLen = Byte.toUnsignedInt(p.get(1));
    NetlinkAttributes a = NetlinkAttributes.parse(p, RTMSG_LEN, p.limit());
    int table = a.u32(RTA_TABLE).orElse(Byte.toUnsignedInt(p.get(4)));
    Optional<IpPrefix> dst = a.bytes(RTA_DST).map(b -> IpPrefix.of(b, dstLen));
    Optional<IpPrefix> gw = a.bytes(RTA_GATEWAY).filter(b -> b.length == family.byteLength()).map(IpPrefix::host);
    OptionalInt oif = a.u32(RTA_OIF);
    return Optional.of(
        new Route(family, table, RouteType.fromRtn(Byte.toUnsignedInt(p.get(7))), dst, gw, oif,
            Byte.toUnsignedInt(p.get(5)), a.u32(RTA_PRIORITY), decodeEncap(a)));
  }
}

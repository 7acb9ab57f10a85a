package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * {@link Link} to and from RTM_NEWLINK / RTM_DELLINK: {@code struct ifinfomsg} (u8 family, u8 pad, u16
 * type, s32 index, u32 flags, u32 change) then IFLA_* attributes. The kind is
 * IFLA_LINKINFO &gt; IFLA_INFO_KIND; for a VRF the table is IFLA_LINKINFO &gt; IFLA_INFO_DATA &gt;
 * IFLA_VRF_TABLE (u32); for a VXLAN device IFLA_INFO_DATA holds IFLA_VXLAN_*.
 */
final class LinkCodec {
  private LinkCodec() {}

  static void encodeDump(NetlinkMessageWriter w, int seq) {
    w.begin(RTM_GETLINK, NLM_F_REQUEST | NLM_F_DUMP, seq);
    w.u8(0).u8(0).u16(0).u32(0).u32(0).u32(0);
    w.end();
  }

  /**
   * RTM_SETLINK of one IPv4 device setting ({@code net.ipv4.conf.<dev>.<name>}):
   * IFLA_AF_SPEC &gt; AF_INET &gt; IFLA_INET_CONF &gt; [id] = value. The kernel's way to write a sysctl
   * with CAP_NET_ADMIN alone (containers get /proc/sys read-only).
   */
  static void encodeSetIpv4Conf(NetlinkMessageWriter w, int seq, int ifindex, int confId, int value) {
    w.begin(RTM_SETLINK, NLM_F_REQUEST | NLM_F_ACK, seq);
    w.u8(0).u8(0).u16(0).u32(ifindex).u32(0).u32(0);
    int afSpec = w.beginNested(IFLA_AF_SPEC);
    int inet = w.beginNested(AF_INET);
    int conf = w.beginNested(IFLA_INET_CONF);
    w.attrU32(confId, value);
    w.endNested(conf);
    w.endNested(inet);
    w.endNested(afSpec);
    w.end();
  }

  /**
   * {@code ip link add NAME [mtu M] up type vxlan external [gpe] dstport PORT nolearning}: RTM_NEWLINK
   * with NLM_F_CREATE|NLM_F_EXCL. The kernel ignores IFLA_IFALIAS on creation (rtnl_create_link does
   * not read it): the alias is set by {@link #encodeSet} right after.
   */
  static void encodeCreateVxlan(NetlinkMessageWriter w, int seq, VxlanDevice d) {
    encodeCreateVxlan(w, seq, d, true);
  }

  /** As above, created down when {@code up} is false (the kernel probe's device: no UDP socket is opened). */
  static void encodeCreateVxlan(NetlinkMessageWriter w, int seq, VxlanDevice d, boolean up) {
    w.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq);
    w.u8(0).u8(0).u16(0).u32(0).u32(up ? IFF_UP : 0).u32(IFF_UP);
    w.attrString(IFLA_IFNAME, d.name());
    if (d.mtu() > 0) {
      w.attrU32(IFLA_MTU, d.mtu());
    }
    int info = w.beginNested(IFLA_LINKINFO);
    w.attrString(IFLA_INFO_KIND, "vxlan");
    int data = w.beginNested(IFLA_INFO_DATA);
    w.attrU8(IFLA_VXLAN_COLLECT_METADATA, 1);
    w.attrU8(IFLA_VXLAN_LEARNING, 0);
    w.attrBe16(IFLA_VXLAN_PORT, d.port());
    if (d.gpe()) {
      w.attrFlag(IFLA_VXLAN_GPE);
    }
    w.endNested(data);
    w.endNested(info);
    w.end();
  }

  /** {@code ip link set dev #INDEX [mtu M] [alias A] up|down}: RTM_NEWLINK on an existing index. */
  static void encodeSet(NetlinkMessageWriter w, int seq, int index, int mtu, boolean up, Optional<String> alias) {
    w.begin(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, seq);
    w.u8(0).u8(0).u16(0).u32(index).u32(up ? IFF_UP : 0).u32(IFF_UP);
    if (mtu > 0) {
      w.attrU32(IFLA_MTU, mtu);
    }
    alias.ifPresent(a -> w.attrString(IFLA_IFALIAS, a));
    w.end();
  }

  /** {@code ip link del dev #INDEX}. */
  static void encodeDelete(NetlinkMessageWriter w, int seq, int index) {
    w.begin(RTM_DELLINK, NLM_F_REQUEST | NLM_F_ACK, seq);
    w.u8(0).u8(0).u16(0).u32(index).u32(0).u32(0);
    w.end();
  }

  static Link decode(ByteBuffer p) {
    if (p.limit() < IFINFOMSG_LEN) {
      throw new IllegalArgumentException("short ifinfomsg: " + p.limit() + " bytes");
    }
    int index = p.getInt(4);
    boolean up = (p.getInt(8) & IFF_UP) != 0;
    NetlinkAttributes a = NetlinkAttributes.parse(p, IFINFOMSG_LEN, p.limit());
    String name = a.string(IFLA_IFNAME).orElse("if" + index);
    Optional<NetlinkAttributes> info = a.nested(IFLA_LINKINFO);
    Optional<String> kind = info.flatMap(i -> i.string(IFLA_INFO_KIND));
    Optional<NetlinkAttributes> data = info.flatMap(i -> i.nested(IFLA_INFO_DATA));
    OptionalInt vrfTable = OptionalInt.empty();
    Optional<Link.Vxlan> vxlan = Optional.empty();
    if (kind.isPresent() && data.isPresent()) {
      NetlinkAttributes d = data.get();
      if (kind.get().equals("vrf")) {
        vrfTable = d.u32(IFLA_VRF_TABLE);
      } else if (kind.get().equals("vxlan")) {
        int port = d.bytes(IFLA_VXLAN_PORT).filter(b -> b.length == 2)
            .map(b -> ((b[0] & 0xff) << 8) | (b[1] & 0xff)).orElse(0);
        vxlan = Optional.of(new Link.Vxlan(port, d.u8(IFLA_VXLAN_COLLECT_METADATA).orElse(0) != 0,
            d.has(IFLA_VXLAN_GPE), d.u8(IFLA_VXLAN_LEARNING).orElse(1) != 0));
      }
    }
    Optional<String> alias = a.string(IFLA_IFALIAS).filter(s -> !s.isEmpty());
    return new Link(index, name, kind, vrfTable, alias, a.u32(IFLA_MTU).orElse(0), up, vxlan);
  }
}

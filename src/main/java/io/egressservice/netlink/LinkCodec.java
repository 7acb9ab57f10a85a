package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * {@link Link} from RTM_NEWLINK / RTM_DELLINK: {@code struct ifinfomsg} (u8 family, u8 pad, u16
 * type, s32 index, u32 flags, u32 change) then IFLA_* attributes. The kind is
 * IFLA_LINKINFO &gt; IFLA_INFO_KIND; for a VRF the table is IFLA_LINKINFO &gt; IFLA_INFO_DATA &gt;
 * IFLA_VRF_TABLE (u32).
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

  static Link decode(ByteBuffer p) {
    if (p.limit() < IFINFOMSG_LEN) {
      throw new IllegalArgumentException("short ifinfomsg: " + p.limit() + " bytes");
    }
    int index = p.getInt(4);
    NetlinkAttributes a = NetlinkAttributes.parse(p, IFINFOMSG_LEN, p.limit());
    String name = a.string(IFLA_IFNAME).orElse("if" + index);
    Optional<NetlinkAttributes> info = a.nested(IFLA_LINKINFO);
    Optional<String> kind = info.flatMap(i -> i.string(IFLA_INFO_KIND));
    OptionalInt vrfTable = OptionalInt.empty();
    if (kind.isPresent() && kind.get().equals("vrf")) {
      Optional<NetlinkAttributes> data = info.flatMap(i -> i.nested(IFLA_INFO_DATA));
      if (data.isPresent()) {
        vrfTable = data.get().u32(IFLA_VRF_TABLE);
      }
    }
    return new Link(index, name, kind, vrfTable);
  }
}

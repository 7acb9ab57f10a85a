package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** Decoding of recorded kernel messages (little-endian x86-64), no root needed. */
class WireDecodingTest {

  @BeforeEach
  void littleEndian() {
    assumeTrue(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "test vectors are little-endian");
  }

  private static List<NetlinkMessage> parse(byte[] datagram) {
    ByteBuffer b = ByteBuffer.allocateDirect(datagram.length);
    b.put(datagram).clear();
    return NetlinkMessage.parse(b, datagram.length);
  }

  /**
   * Two messages of one datagram of the reply to {@code ip -4 rule show}, recorded with
   * {@code strace -e trace=recvmsg -xx} on kernel 6.18 after
   * {@code ip rule add from 10.0.0.5 lookup 1000 prio 5000 proto 201}.
   */
  private static final String RULE_DUMP = """
      34 00 00 00 | 20 00 | 02 00 | b6 36 10 6b | 72 18 00 00   # RTM_NEWRULE, NLM_F_MULTI
      02 00 00 00 ff 00 00 01 | 00 00 00 00                     # table local, FR_ACT_TO_TBL
      08 00 0f 00 | ff 00 00 00                                 # FRA_TABLE 255
      08 00 0e 00 | ff ff ff ff                                 # FRA_SUPPRESS_PREFIXLEN -1 (unset)
      05 00 15 00 | 02 00 00 00                                 # FRA_PROTOCOL kernel; no FRA_PRIORITY: priority 0
      44 00 00 00 | 20 00 | 02 00 | b6 36 10 6b | 72 18 00 00
      02 00 20 00 fc 00 00 01 | 00 00 00 00                     # src_len 32, table byte RT_TABLE_COMPAT
      08 00 0f 00 | e8 03 00 00                                 # FRA_TABLE 1000
      08 00 0e 00 | ff ff ff ff
      05 00 15 00 | c9 00 00 00                                 # FRA_PROTOCOL 201
      08 00 06 00 | 88 13 00 00                                 # FRA_PRIORITY 5000
      08 00 02 00 | 0a 00 00 05                                 # FRA_SRC 10.0.0.5
      """;

  @Test
  void decodesRecordedRuleDump() {
    List<NetlinkMessage> msgs = parse(Hex.bytes(RULE_DUMP));
    assertThat(msgs).hasSize(2).allSatisfy(m -> {
      assertThat(m.type()).isEqualTo(RTM_NEWRULE);
      assertThat(m.flags()).isEqualTo(NLM_F_MULTI);
    });
    Rule local = RuleCodec.decode(msgs.get(0).payload()).orElseThrow();
    assertThat(local).isEqualTo(Rule.lookup(IpFamily.V4, 0, 255).protocol(2));
    assertThat(local.suppressPrefixLength()).isEmpty();
    assertThat(local).hasToString("0: from all lookup local proto kernel");

    Rule ours = RuleCodec.decode(msgs.get(1).payload()).orElseThrow();
    assertThat(ours).isEqualTo(Rule.lookup(IpFamily.V4, 5000, 1000).from(IpPrefix.parse("10.0.0.5")).protocol(201));
    assertThat(ours).hasToString("5000: from 10.0.0.5 lookup 1000 proto 201");
  }

  /**
   * RTM_NEWLINK of a VRF device, built by hand because this kernel has no vrf module. The layout
   * follows the kernel's writers: rtnl_fill_ifinfo() puts struct ifinfomsg, IFLA_IFNAME, ...;
   * rtnl_link_fill() opens IFLA_LINKINFO with nla_nest_start_noflag() (no NLA_F_NESTED bit),
   * rtnl_link_info_fill() puts IFLA_INFO_KIND = ops->kind ("vrf", NUL-terminated) and, since
   * vrf_link_ops has fill_info, opens IFLA_INFO_DATA (also _noflag), in which vrf_fillinfo()
   * (drivers/net/vrf.c) puts IFLA_VRF_TABLE as u32. The same shape as a recorded veth message
   * (IFLA_LINKINFO > IFLA_INFO_KIND "veth"), which the kernel test checks end to end.
   */
  private static final String VRF_NEWLINK = """
      50 00 00 00 | 10 00 | 00 00 | 00 00 00 00 | 00 00 00 00   # len 80, RTM_NEWLINK
      00 00 | 01 00 | 07 00 00 00 | 41 04 00 00 | 00 00 00 00   # ifinfomsg: AF_UNSPEC, ARPHRD_ETHER, ifindex 7, UP|RUNNING|MASTER
      0d 00 03 00 | 76 72 66 2d 62 6c 75 65 00 00 00 00         # IFLA_IFNAME "vrf-blue\\0" (len 13, 3 pad)
      08 00 04 00 | 27 00 01 00                                 # IFLA_MTU 65575 (skipped)
      18 00 12 00                                               # IFLA_LINKINFO, len 24
        08 00 01 00 | 76 72 66 00                               #   IFLA_INFO_KIND "vrf\\0"
        0c 00 02 00                                             #   IFLA_INFO_DATA, len 12
          08 00 01 00 | e9 03 00 00                             #     IFLA_VRF_TABLE 1001
      """;

  @Test
  void decodesVrfLinkWithItsTable() {
    List<NetlinkMessage> msgs = parse(Hex.bytes(VRF_NEWLINK));
    assertThat(msgs).singleElement().extracting(NetlinkMessage::type).isEqualTo(RTM_NEWLINK);
    Link link = LinkCodec.decode(msgs.get(0).payload());
    assertThat(link).isEqualTo(new Link(7, "vrf-blue", Optional.of("vrf"), OptionalInt.of(1001), Optional.empty(),
        65575, true, Optional.empty()));
    assertThat(Notifications.toEvent(msgs.get(0))).contains(ChangeEvent.ofLink(ChangeKind.NEW, link));
  }

  @Test
  void nestedFlagIsIgnoredWhenPresent() {
    byte[] b = Hex.bytes(VRF_NEWLINK);
    b[16 + 16 + 16 + 8 + 3] |= (byte) 0x80; // IFLA_LINKINFO type high byte: NLA_F_NESTED
    Link link = LinkCodec.decode(parse(b).get(0).payload());
    assertThat(link.vrfTable()).hasValue(1001);
  }

  @Test
  void linkWithoutLinkInfoHasNoKind() {
    String lo = """
        30 00 00 00 | 10 00 | 00 00 | 00 00 00 00 | 00 00 00 00   # len 48
        00 00 | 04 03 | 01 00 00 00 | 49 00 01 00 | 00 00 00 00   # ARPHRD_LOOPBACK, ifindex 1
        07 00 03 00 | 6c 6f 00 00                                 # IFLA_IFNAME "lo"
        08 00 04 00 | 00 00 01 00                                 # IFLA_MTU
        """;
    // flags 0x10049 (UP, LOOPBACK, RUNNING, LOWER_UP); IFLA_MTU 65536
    assertThat(LinkCodec.decode(parse(Hex.bytes(lo)).get(0).payload()))
        .isEqualTo(new Link(1, "lo", Optional.empty(), OptionalInt.empty(), Optional.empty(), 65536, true, Optional.empty()));
  }

  @Test
  void decodesErrorWithExtendedAck() {
    String error = """
        48 00 00 00 | 02 00 | 00 03 | 05 00 00 00 | 72 18 00 00   # len 72, NLMSG_ERROR, CAPPED|ACK_TLVS, seq 5
        ea ff ff ff                                               # error -22 (EINVAL)
        2c 00 00 00 | 20 00 | 05 06 | 05 00 00 00 | 00 00 00 00   # the request's header only (NETLINK_CAP_ACK)
        21 00 01 00 | 42 61 63 6b 77 61 72 64 20 67 6f 74 6f 20   # NLMSGERR_ATTR_MSG, len 33
        6e 6f 74 20 73 75 70 70 6f 72 74 65 64 2e 00 | 00 00 00   # "Backward goto not supported.\\0", 3 pad
        """;
    NetlinkMessage m = parse(Hex.bytes(error)).get(0);
    assertThat(m.type()).isEqualTo(NLMSG_ERROR);
    assertThat(m.errorCode()).isEqualTo(22);
    assertThat(m.extendedAckMessage()).isEqualTo("Backward goto not supported.");
    NetlinkException e = NetlinkException.fromErrno(m.errorCode(), "add ip rule '100: from all goto 50'", "netns x",
        m.extendedAckMessage());
    assertThat(e).isInstanceOf(NetlinkException.InvalidArgument.class)
        .hasMessage("add ip rule '100: from all goto 50' in netns x: invalid argument (the kernel refused the request)"
            + " (kernel: Backward goto not supported.)");
    assertThat(e.request()).contains("add ip rule '100: from all goto 50'");
  }

  @Test
  void decodesRouteWithTableAbove255() {
    String route = """
        3c 00 00 00 | 18 00 | 02 00 | 01 00 00 00 | 00 00 00 00   # RTM_NEWROUTE
        02 18 00 00 fc 04 00 01 | 00 00 00 00                     # AF_INET, /24, table COMPAT, proto static, universe, unicast
        08 00 0f 00 | 2c 01 00 00                                 # RTA_TABLE 300
        08 00 01 00 | 0a 08 00 00                                 # RTA_DST 10.8.0.0
        08 00 05 00 | 0a 03 00 02                                 # RTA_GATEWAY
        08 00 04 00 | 03 00 00 00                                 # RTA_OIF 3
        """;
    Route r = RouteCodec.decode(parse(Hex.bytes(route)).get(0).payload()).orElseThrow();
    assertThat(r).isEqualTo(Route.of(IpFamily.V4, 300, RouteType.UNICAST, Optional.of(IpPrefix.parse("10.8.0.0/24")))
        .via(IpPrefix.parse("10.3.0.2")).dev(3).protocol(4));
  }

  @Test
  void decodesAddressesOfBothFamiliesAndPointToPoint() {
    String v4 = """
        30 00 00 00 | 14 00 | 02 00 | 01 00 00 00 | 00 00 00 00   # RTM_NEWADDR, NLM_F_MULTI
        02 18 80 00 | 03 00 00 00                                 # AF_INET, /24, permanent, global, ifindex 3
        08 00 01 00 | c0 a8 01 0a                                 # IFA_ADDRESS 192.168.1.10
        08 00 02 00 | c0 a8 01 0a                                 # IFA_LOCAL 192.168.1.10
        08 00 08 00 | 80 00 00 00                                 # IFA_FLAGS (ignored)
        """;
    String ptp = """
        28 00 00 00 | 14 00 | 02 00 | 01 00 00 00 | 00 00 00 00
        02 20 80 00 | 04 00 00 00                                 # /32 on ifindex 4
        08 00 01 00 | 0a 00 00 02                                 # IFA_ADDRESS: the peer 10.0.0.2
        08 00 02 00 | 0a 00 00 01                                 # IFA_LOCAL: ours, 10.0.0.1
        """;
    String v6 = """
        2c 00 00 00 | 14 00 | 02 00 | 01 00 00 00 | 00 00 00 00
        0a 40 80 fd | 05 00 00 00                                 # AF_INET6, /64, scope link, ifindex 5
        14 00 01 00 | fe 80 00 00 00 00 00 00 00 00 00 00 00 00 00 07  # IFA_ADDRESS fe80::7
        """;
    assertThat(AddressCodec.decode(parse(Hex.bytes(v4)).get(0).payload())).contains(
        new Address(IpFamily.V4, 3, IpPrefix.parse("192.168.1.10"), 24, Address.SCOPE_GLOBAL));
    assertThat(AddressCodec.decode(parse(Hex.bytes(ptp)).get(0).payload())).contains(
        new Address(IpFamily.V4, 4, IpPrefix.parse("10.0.0.1"), 32, Address.SCOPE_GLOBAL));
    assertThat(AddressCodec.decode(parse(Hex.bytes(v6)).get(0).payload())).contains(
        new Address(IpFamily.V6, 5, IpPrefix.parse("fe80::7"), 64, Address.SCOPE_LINK));
  }

  @Test
  void truncatedMessageIsAnErrorNotACrash() {
    byte[] b = Hex.bytes(RULE_DUMP);
    byte[] cut = java.util.Arrays.copyOf(b, 40);
    org.assertj.core.api.Assertions.assertThatThrownBy(() -> parse(cut))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("malformed");
  }
}

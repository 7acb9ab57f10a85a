package io.egressservice.netlink;

/**
 * Numbers from the Linux UAPI headers used on the wire. Values are architecture independent (they
 * are protocol constants, not struct layouts); the header names are given so they can be checked.
 */
final class NetlinkConstants {
  private NetlinkConstants() {}

  // <linux/netlink.h>
  static final int AF_NETLINK = 16;
  static final int NETLINK_ROUTE = 0;
  static final int SOL_NETLINK = 270;
  static final int NETLINK_CAP_ACK = 10;
  static final int NETLINK_EXT_ACK = 11;
  static final int NETLINK_GET_STRICT_CHK = 12;

  static final int NLMSG_HDRLEN = 16; // struct nlmsghdr: u32 len, u16 type, u16 flags, u32 seq, u32 pid
  static final int NLA_HDRLEN = 4; // struct nlattr: u16 len, u16 type
  static final int NLA_F_NESTED = 0x8000;
  static final int NLA_F_NET_BYTEORDER = 0x4000;
  static final int NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

  static final int NLMSG_NOOP = 1;
  static final int NLMSG_ERROR = 2;
  static final int NLMSG_DONE = 3;
  static final int NLMSG_OVERRUN = 4;

  static final int NLM_F_REQUEST = 0x01;
  static final int NLM_F_MULTI = 0x02;
  static final int NLM_F_ACK = 0x04;
  static final int NLM_F_DUMP_INTR = 0x10;
  static final int NLM_F_ROOT = 0x100;
  static final int NLM_F_MATCH = 0x200;
  static final int NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH;
  static final int NLM_F_EXCL = 0x200;
  static final int NLM_F_CREATE = 0x400;
  /** In an NLMSG_ERROR reply: the echoed request was cut to its header (NETLINK_CAP_ACK). */
  static final int NLM_F_CAPPED = 0x100;
  /** In an NLMSG_ERROR reply: extended-ack TLVs follow the echoed request. */
  static final int NLM_F_ACK_TLVS = 0x200;
  static final int NLMSGERR_ATTR_MSG = 1;

  // <linux/rtnetlink.h>
  static final int RTM_NEWLINK = 16;
  static final int RTM_DELLINK = 17;
  static final int RTM_GETLINK = 18;
  static final int RTM_SETLINK = 19;
  static final int RTM_NEWADDR = 20;
  static final int RTM_DELADDR = 21;
  static final int RTM_GETADDR = 22;
  static final int RTM_NEWROUTE = 24;
  static final int RTM_DELROUTE = 25;
  static final int RTM_GETROUTE = 26;
  static final int RTM_NEWRULE = 32;
  static final int RTM_DELRULE = 33;
  static final int RTM_GETRULE = 34;

  static final int RTMSG_LEN = 12; // struct rtmsg: 8 x u8, u32 flags
  static final int FIB_RULE_HDR_LEN = 12; // struct fib_rule_hdr: 8 x u8, u32 flags
  static final int IFINFOMSG_LEN = 16; // struct ifinfomsg: u8 family, u8 pad, u16 type, s32 index, u32 flags, u32 change

  static final int IFADDRMSG_LEN = 8; // struct ifaddrmsg: u8 family, u8 prefixlen, u8 flags, u8 scope, u32 index

  // <linux/if_addr.h>
  static final int IFA_ADDRESS = 1;
  static final int IFA_LOCAL = 2;

  static final int RTA_DST = 1;
  static final int RTA_OIF = 4;
  static final int RTA_GATEWAY = 5;
  static final int RTA_PRIORITY = 6;
  static final int RTA_TABLE = 15;
  static final int RTA_ENCAP_TYPE = 21;
  static final int RTA_ENCAP = 22;

  // <linux/lwtunnel.h>
  static final int LWTUNNEL_ENCAP_IP = 2;
  static final int LWTUNNEL_ENCAP_IP6 = 4;
  static final int LWTUNNEL_IP_ID = 1; // __be64 (the same numbers for LWTUNNEL_IP6_*)
  static final int LWTUNNEL_IP_DST = 2;
  static final int LWTUNNEL_IP_FLAGS = 6; // __be16, TUNNEL_* of <linux/if_tunnel.h>
  static final int TUNNEL_CSUM = 0x01;

  static final int RTM_F_CLONED = 0x200;

  static final int RT_TABLE_UNSPEC = 0;
  static final int RT_TABLE_COMPAT = 252;
  static final int RT_TABLE_DEFAULT = 253;
  static final int RT_TABLE_MAIN = 254;
  static final int RT_TABLE_LOCAL = 255;

  static final int RT_SCOPE_UNIVERSE = 0;
  static final int RT_SCOPE_LINK = 253;
  static final int RT_SCOPE_HOST = 254;
  static final int RT_SCOPE_NOWHERE = 255;

  static final int RTN_UNICAST = 1;
  static final int RTN_LOCAL = 2;
  static final int RTN_BROADCAST = 3;
  static final int RTN_BLACKHOLE = 6;
  static final int RTN_UNREACHABLE = 7;
  static final int RTN_PROHIBIT = 8;
  static final int RTN_THROW = 9;

  static final int RTPROT_UNSPEC = 0;
  static final int RTPROT_KERNEL = 2;
  static final int RTPROT_BOOT = 3;

  // rtnetlink multicast groups (enum rtnetlink_groups); bind() takes the bit 1 << (group - 1)
  static final int RTNLGRP_LINK = 1;
  static final int RTNLGRP_IPV4_IFADDR = 5;
  static final int RTNLGRP_IPV6_IFADDR = 9;
  static final int RTNLGRP_IPV4_ROUTE = 7;
  static final int RTNLGRP_IPV4_RULE = 8;
  static final int RTNLGRP_IPV6_ROUTE = 11;
  static final int RTNLGRP_IPV6_RULE = 19;

  // <linux/fib_rules.h>
  static final int FRA_DST = 1;
  static final int FRA_SRC = 2;
  static final int FRA_IIFNAME = 3;
  static final int FRA_GOTO = 4;
  static final int FRA_PRIORITY = 6;
  static final int FRA_FWMARK = 10;
  static final int FRA_FLOW = 11;
  static final int FRA_TUN_ID = 12;
  static final int FRA_SUPPRESS_IFGROUP = 13;
  static final int FRA_SUPPRESS_PREFIXLEN = 14;
  static final int FRA_TABLE = 15;
  static final int FRA_FWMASK = 16;
  static final int FRA_OIFNAME = 17;
  static final int FRA_L3MDEV = 19;
  static final int FRA_UID_RANGE = 20;
  static final int FRA_PROTOCOL = 21;
  static final int FRA_IP_PROTO = 22;
  static final int FRA_SPORT_RANGE = 23;
  static final int FRA_DPORT_RANGE = 24;
  static final int FRA_SPORT_MASK = 28;
  static final int FRA_DPORT_MASK = 29;

  static final int FR_ACT_TO_TBL = 1;
  static final int FR_ACT_GOTO = 2;
  static final int FR_ACT_NOP = 3;
  static final int FR_ACT_BLACKHOLE = 6;
  static final int FR_ACT_UNREACHABLE = 7;
  static final int FR_ACT_PROHIBIT = 8;

  static final int FIB_RULE_INVERT = 0x2;

  // <linux/if_link.h>
  static final int IFLA_ADDRESS = 1;
  static final int IFLA_IFNAME = 3;
  static final int IFLA_AF_SPEC = 26;
  /** In IFLA_AF_SPEC &gt; AF_INET: the device's net.ipv4.conf values, one u32 attribute per IPV4_DEVCONF_* id. */
  static final int IFLA_INET_CONF = 1;
  static final int AF_INET = 2;
  static final int IFLA_MTU = 4;
  static final int IFLA_LINKINFO = 18;
  static final int IFLA_IFALIAS = 20;
  static final int IFLA_INFO_KIND = 1;
  static final int IFLA_INFO_DATA = 2;
  static final int IFLA_VRF_TABLE = 1;
  static final int IFF_UP = 0x1;

  // IFLA_VXLAN_* (<linux/if_link.h>)
  static final int IFLA_VXLAN_LEARNING = 7;
  static final int IFLA_VXLAN_PORT = 15; // __be16
  static final int IFLA_VXLAN_COLLECT_METADATA = 25;
  static final int IFLA_VXLAN_GPE = 27; // flag

  static final int IFNAMSIZ = 16;
}

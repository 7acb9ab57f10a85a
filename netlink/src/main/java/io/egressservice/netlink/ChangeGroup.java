package io.egressservice.netlink;

/** rtnetlink multicast groups a {@link Subscription} can listen to. */
public enum ChangeGroup {
  IPV4_RULE(NetlinkConstants.RTNLGRP_IPV4_RULE),
  IPV6_RULE(NetlinkConstants.RTNLGRP_IPV6_RULE),
  IPV4_ROUTE(NetlinkConstants.RTNLGRP_IPV4_ROUTE),
  IPV6_ROUTE(NetlinkConstants.RTNLGRP_IPV6_ROUTE),
  LINK(NetlinkConstants.RTNLGRP_LINK),
  IPV4_ADDRESS(NetlinkConstants.RTNLGRP_IPV4_IFADDR),
  IPV6_ADDRESS(NetlinkConstants.RTNLGRP_IPV6_IFADDR);

  private final int rtnlgrp;

  ChangeGroup(int rtnlgrp) {
    this.rtnlgrp = rtnlgrp;
  }

  /** The {@code RTNLGRP_*} number. */
  public int rtnlgrp() {
    return rtnlgrp;
  }

  /** The bit for {@code sockaddr_nl.nl_groups}. */
  int bindMask() {
    return 1 << (rtnlgrp - 1);
  }
}

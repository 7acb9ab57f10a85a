package io.egressservice.probe;

/**
 * A kernel or nftables feature the agent depends on, with the first versions that have it (see
 * docs/kernel-requirements.md for the commits and releases these are read from). The versions are upstream ones:
 * distribution kernels backport, which is why the agent tries each feature instead of comparing version numbers.
 */
public enum Feature {
  NFT_INET_NAT("an nftables nat chain in an inet table (snat ip/ip6 to ... map @m)", "5.2", "0.9.1"),
  NFT_INTERVAL_SETS("nftables interval sets (flags interval, prefixes and ranges)", "3.13", "0.099"),
  NFT_ELEMENT_COMMENTS("comments on nftables set/map elements (NFTA_SET_ELEM_USERDATA), read back", "4.1", "0.9.0"),
  /**
   * fib itself is 4.10 (f6d0cbcf09c5); {@code oif missing} is compiled to its existence flag NFTA_FIB_F_PRESENT (kernel
   * 055c4b34b94f), which nft emits since 0.8 (f686a17e, March 2017, with the flag in its copy of the kernel's
   * header): the kernel side is of the same series, so 4.12 rather than the 5.3 written before (release unverified).
   */
  NFT_FIB("the nftables fib expression with an existence check (fib saddr . iif oif missing)", "4.12", "0.8"),
  NFT_CT_MARK("nftables ct direction, ct status and meta mark set", "3.14", "0.099"),
  NFT_ELEMENT_TIMEOUTS("nftables set element timeouts (flags timeout)", "4.1", "0.5"),
  /**
   * nft has object comments since 0.9.7 (293c9b11), but prints them in JSON, which is how the agent reads them, only
   * since 1.0.6 (05fcf801 "json: add stateful object comment support").
   */
  NFT_OBJECT_COMMENTS("comments on nftables named counters (NFTA_OBJ_USERDATA), read back", "5.10", "0.9.7"),
  NFT_INET_ROUTE_CHAIN("an nftables route chain in an inet table, with verdict maps and ifname sets", "5.2",
      "0.8.3"),
  RULE_PROTOCOL_FWMASK("ip rules with a protocol (FRA_PROTOCOL) and fwmark/mask", "4.17", "-"),
  THROW_ROUTES("throw routes with a protocol, listed by a kernel-filtered dump (NETLINK_GET_STRICT_CHK)", "4.20",
      "-"),
  VXLAN_GPE("a collect-metadata VXLAN-GPE device (vxlan external gpe) and routes with ip encap", "4.7", "-"),
  DEVICE_CONF("per-device IPv4 settings over rtnetlink (rp_filter, src_valid_mark)", "2.6.38", "-"),
  CONNTRACK_FILTERED_DUMP("ctnetlink dumps filtered by source in the kernel (CTA_FILTER)", "5.8", "-");

  private final String description;
  private final String linux;
  private final String nft;

  Feature(String description, String linux, String nft) {
    this.description = description;
    this.linux = linux;
    this.nft = nft;
  }

  /** What the feature is, in words an administrator can search for. */
  public String description() {
    return description;
  }

  /** "Linux 5.2 and nftables 0.9.1", or "Linux 4.17" when libnftables is not involved. */
  public String firstVersions() {
    return "Linux " + linux + (nft.equals("-") ? "" : " and nftables " + nft);
  }
}

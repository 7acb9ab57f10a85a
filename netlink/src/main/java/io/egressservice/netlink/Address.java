package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Objects;

/**
 * An address on a device, as {@code ip addr show} lists it ({@code struct ifaddrmsg} plus
 * {@code IFA_*}): the device's ifindex, the local address and its prefix length, and the scope
 * ({@code RT_SCOPE_*}: 0 global, 253 link, 254 host).
 *
 * @param local the address itself ({@code IFA_LOCAL}, else {@code IFA_ADDRESS}), as a host prefix
 */
public record Address(IpFamily family, int index, IpPrefix local, int prefixLength, int scope) {
  public static final int SCOPE_GLOBAL = NetlinkConstants.RT_SCOPE_UNIVERSE;
  public static final int SCOPE_LINK = NetlinkConstants.RT_SCOPE_LINK;
  public static final int SCOPE_HOST = NetlinkConstants.RT_SCOPE_HOST;

  public Address {
    Objects.requireNonNull(family, "family");
    Objects.requireNonNull(local, "local");
    if (local.family() != family || !local.isHost()) {
      throw new IllegalArgumentException("address " + local + " is not a single " + family + " address");
    }
    if (prefixLength < 0 || prefixLength > family.bits()) {
      throw new IllegalArgumentException("prefix length " + prefixLength + " is out of range for " + family);
    }
  }

  /** The subnet the address is in ({@code 192.168.1.10/24} gives {@code 192.168.1.0/24}). */
  public IpPrefix subnet() {
    return IpPrefix.of(local.addressBytes(), prefixLength);
  }

  /** {@code 192.168.1.10/24 dev #3 scope global}. */
  @Override
  public String toString() {
    String s = switch (scope) {
      case SCOPE_GLOBAL -> "global";
      case SCOPE_LINK -> "link";
      case SCOPE_HOST -> "host";
      default -> Integer.toString(scope);
    };
    return local.addressText() + "/" + prefixLength + " dev #" + index + " scope " + s;
  }
}

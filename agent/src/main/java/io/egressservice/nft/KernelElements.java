package io.egressservice.nft;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.HexFormat;

/** Keys and values of the owned table's elements as the kernel holds them (network-order bytes). */
final class KernelElements {
  private KernelElements() {}

  /** An address of {@code family} (4 or 16 bytes) as a host prefix; anything else is not an element of ours. */
  static IpPrefix host(byte[] bytes, IpFamily family, String set) {
    if (bytes.length != (family == IpFamily.V4 ? 4 : 16)) {
      throw new NftException("expected an " + family + " address in nftables set " + set + ", got "
          + (bytes.length == 0 ? "the catch-all element" : HexFormat.of().formatHex(bytes)));
    }
    return IpPrefix.host(bytes);
  }
}

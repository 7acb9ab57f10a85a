package io.egressservice.nft;

import io.egressservice.kernel.NftException;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.HexFormat;

/** Keys and values of the owned table's elements as the kernel holds them (network-order bytes). */
final class KernelElements {
  private KernelElements() {}

  /** Whether {@code bytes} are an address of {@code family} (4 or 16 of them). */
  static boolean isAddress(byte[] bytes, IpFamily family) {
    return bytes.length == (family == IpFamily.V4 ? 4 : 16);
  }

  /** An address of {@code family} as a host prefix; anything else is not an element of ours. */
  static IpPrefix host(byte[] bytes, IpFamily family, String set) {
    if (!isAddress(bytes, family)) {
      throw new NftException("expected an " + family + " address in nftables set " + set + ", got "
          + (bytes.length == 0 ? "the catch-all element" : HexFormat.of().formatHex(bytes)));
    }
    return IpPrefix.host(bytes);
  }
}

package io.egressservice.ip;

/** An IP family, named as iproute2 and nftables name it. */
public enum IpFamily {
  V4(4, 32, "inet", "ip", 2),
  V6(16, 128, "inet6", "ip6", 10);

  private final int byteLength;
  private final int bits;
  private final String iproute2Name;
  private final String nftName;
  private final int addressFamily;

  IpFamily(int byteLength, int bits, String iproute2Name, String nftName, int addressFamily) {
    this.byteLength = byteLength;
    this.bits = bits;
    this.iproute2Name = iproute2Name;
    this.nftName = nftName;
    this.addressFamily = addressFamily;
  }

  public int byteLength() {
    return byteLength;
  }

  public int bits() {
    return bits;
  }

  /** "inet" or "inet6", as in {@code ip -j rule show} and our JSON output. */
  public String iproute2Name() {
    return iproute2Name;
  }

  /** "ip" or "ip6", as in nft expressions ({@code ip saddr}). */
  public String nftName() {
    return nftName;
  }

  /** AF_INET (2) or AF_INET6 (10). */
  public int addressFamily() {
    return addressFamily;
  }

  /** The {@code -4} / {@code -6} flag of the ip command. */
  public String ipFlag() {
    return this == V4 ? "-4" : "-6";
  }

  public static IpFamily fromAddressFamily(int af) {
    return switch (af) {
      case 2 -> V4;
      case 10 -> V6;
      default -> throw new IllegalArgumentException("unsupported address family " + af);
    };
  }
}

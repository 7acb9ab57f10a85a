package io.egressservice.ip;

import java.math.BigInteger;
import java.util.Arrays;
import java.util.Optional;

/**
 * An IPv4 or IPv6 address with a prefix length: a host ({@code /32}, {@code /128}) or a network.
 *
 * <p>Parsing accepts only literals (never resolves names). Text is canonical: IPv6 as RFC 5952 (the
 * form iproute2 and nft print), hosts without a length, networks as {@code addr/len}.
 * Networks are kept with their host bits cleared ({@code 10.1.2.3/8} becomes {@code 10.0.0.0/8}),
 * because the kernel and nft store them that way.
 */
public final class IpPrefix implements Comparable<IpPrefix> {
  private final IpFamily family;
  private final byte[] bytes;
  private final int length;
  /**
   * Precomputed: plans hash and compare thousands of addresses per reconcile. From the address as 32-bit
   * words, not {@code Arrays.hashCode} of its bytes, which gives 10.128.1.0 and 10.128.0.31 the same hash:
   * a node's pod addresses then crowd a few hash buckets (measured: HashMap bins turned into trees, and
   * the diff at 1,000 services cost 19 times that at 100).
   */
  private final int hash;
  /**
   * The order of {@link #compareTo} in one number: family, the first 6 address bytes, and (IPv4, whose
   * address fits) the length. It decides every IPv4 comparison and most IPv6 ones, which sorting a plan's
   * thousands of rules is made of.
   */
  private final long orderKey;

  private IpPrefix(IpFamily family, byte[] bytes, int length) {
    this.family = family;
    this.bytes = bytes;
    this.length = length;
    this.hash = 31 * wordHash(bytes) + length;
    long key = (long) family.ordinal() << 56;
    for (int i = 0; i < Math.min(6, bytes.length); i++) {
      key |= (long) (bytes[i] & 0xff) << (48 - 8 * i);
    }
    this.orderKey = family == IpFamily.V4 ? key | length : key;
  }

  private static int wordHash(byte[] bytes) {
    int h = 0;
    for (int i = 0; i < bytes.length; i += 4) {
      int word = (bytes[i] & 0xff) << 24 | (bytes[i + 1] & 0xff) << 16 | (bytes[i + 2] & 0xff) << 8 | (bytes[i + 3] & 0xff);
      h = 31 * h + word;
    }
    return h;
  }

  /** A prefix from raw network-order bytes (4 or 16) and a length; host bits are cleared. */
  public static IpPrefix of(byte[] address, int length) {
    IpFamily family =
        switch (address.length) {
          case 4 -> IpFamily.V4;
          case 16 -> IpFamily.V6;
          default -> throw new IllegalArgumentException("an IP address has 4 or 16 bytes, not " + address.length);
        };
    if (length < 0 || length > family.bits()) {
      throw new IllegalArgumentException("prefix length " + length + " is out of range for " + family);
    }
    byte[] copy = Arrays.copyOf(address, address.length);
    for (int bit = length; bit < family.bits(); bit++) {
      copy[bit / 8] &= (byte) ~(0x80 >>> (bit % 8));
    }
    return new IpPrefix(family, copy, length);
  }

  /** A single address (/32 or /128). */
  public static IpPrefix host(byte[] address) {
    return of(address, address.length * 8);
  }

  /**
   * Parses "10.0.0.1", "10.0.0.0/8", "fd00::1", "fd00::/64".
   *
   * @throws IllegalArgumentException with a message naming the bad text
   */
  public static IpPrefix parse(String text) {
    if (text == null || text.isBlank()) {
      throw new IllegalArgumentException("empty IP address");
    }
    String s = text.trim();
    int slash = s.indexOf('/');
    String addr = slash < 0 ? s : s.substring(0, slash);
    byte[] bytes = addr.contains(":") ? parseV6(addr, text) : parseV4(addr, text);
    int length = bytes.length * 8;
    if (slash >= 0) {
      String len = s.substring(slash + 1);
      if (len.isEmpty() || len.length() > 3 || !allDigits(len)) {
        throw new IllegalArgumentException("'" + text + "' has an invalid prefix length");
      }
      length = Integer.parseInt(len);
      if (length > bytes.length * 8) {
        throw new IllegalArgumentException("'" + text + "' has a prefix length over " + bytes.length * 8);
      }
    }
    return of(bytes, length);
  }

  private static boolean allDigits(String s) {
    for (int i = 0; i < s.length(); i++) {
      if (s.charAt(i) < '0' || s.charAt(i) > '9') {
        return false;
      }
    }
    return true;
  }

  /** Like {@link #parse} but empty instead of an exception. */
  public static Optional<IpPrefix> tryParse(String text) {
    try {
      return Optional.of(parse(text));
    } catch (IllegalArgumentException e) {
      return Optional.empty();
    }
  }

  /** Parses a single address; a prefix length other than the full one is refused. */
  public static IpPrefix parseHost(String text) {
    IpPrefix p = parse(text);
    if (!p.isHost()) {
      throw new IllegalArgumentException("'" + text + "' is a network, not a single address");
    }
    return p;
  }

  /**
   * One pass over the characters, no split or streams: every reconcile parses each endpoint, node and
   * service address of the cluster, and under the agent's C1-only JIT the split-and-stream form cost a
   * few percent of a reconcile. Four dotted decimal parts of 1-3 digits, no leading zero, each <= 255.
   */
  private static byte[] parseV4(String addr, String original) {
    int dots = 0;
    for (int i = 0; i < addr.length(); i++) {
      if (addr.charAt(i) == '.') {
        dots++;
      }
    }
    if (dots != 3) {
      throw new IllegalArgumentException("'" + original + "' is not an IP address");
    }
    byte[] out = new byte[4];
    int start = 0;
    for (int part = 0; part < 4; part++) {
      int end = part < 3 ? addr.indexOf('.', start) : addr.length();
      if (end - start == 0 || end - start > 3) {
        throw new IllegalArgumentException("'" + original + "' is not an IP address");
      }
      int v = 0;
      for (int i = start; i < end; i++) {
        char c = addr.charAt(i);
        if (c < '0' || c > '9') {
          throw new IllegalArgumentException("'" + original + "' is not an IP address");
        }
        v = v * 10 + (c - '0');
      }
      if (end - start > 1 && addr.charAt(start) == '0') {
        throw new IllegalArgumentException("'" + original + "' has a leading zero (ambiguous octal)");
      }
      if (v > 255) {
        throw new IllegalArgumentException("'" + original + "' is not an IP address");
      }
      out[part] = (byte) v;
      start = end + 1;
    }
    return out;
  }

  private static byte[] parseV6(String addr, String original) {
    IllegalArgumentException bad = new IllegalArgumentException("'" + original + "' is not an IP address");
    if (addr.contains("%")) {
      throw new IllegalArgumentException("'" + original + "' has a zone index, which is not allowed here");
    }
    int dc = addr.indexOf("::");
    if (dc >= 0 && addr.indexOf("::", dc + 1) >= 0) {
      throw bad;
    }
    String head = dc >= 0 ? addr.substring(0, dc) : addr;
    String tail = dc >= 0 ? addr.substring(dc + 2) : "";
    if (dc >= 0 && head.contains(".")) {
      throw bad; // an embedded dotted quad may only end the address
    }
    int[] headGroups = groups(head, original, bad);
    int[] tailGroups = groups(tail, original, bad);
    // An embedded IPv4 dotted quad may end the address (::ffff:1.2.3.4).
    int total = headGroups.length + tailGroups.length;
    if (dc < 0 && total != 8 || dc >= 0 && total > 7) {
      throw bad;
    }
    byte[] out = new byte[16];
    for (int i = 0; i < headGroups.length; i++) {
      out[2 * i] = (byte) (headGroups[i] >> 8);
      out[2 * i + 1] = (byte) headGroups[i];
    }
    int start = 8 - tailGroups.length;
    for (int i = 0; i < tailGroups.length; i++) {
      out[2 * (start + i)] = (byte) (tailGroups[i] >> 8);
      out[2 * (start + i) + 1] = (byte) tailGroups[i];
    }
    return out;
  }

  private static int[] groups(String part, String original, IllegalArgumentException bad) {
    if (part.isEmpty()) {
      return new int[0];
    }
    String[] fields = part.split(":", -1);
    int extra = fields[fields.length - 1].contains(".") ? 1 : 0;
    int[] out = new int[fields.length + extra];
    for (int i = 0; i < fields.length; i++) {
      String f = fields[i];
      if (i == fields.length - 1 && f.contains(".")) {
        byte[] v4 = parseV4(f, original);
        out[i] = ((v4[0] & 0xff) << 8) | (v4[1] & 0xff);
        out[i + 1] = ((v4[2] & 0xff) << 8) | (v4[3] & 0xff);
        break;
      }
      if (f.isEmpty() || f.length() > 4) {
        throw bad;
      }
      int v = 0;
      for (char c : f.toCharArray()) {
        int d = c < 0x80 ? Character.digit(c, 16) : -1;
        if (d < 0) {
          throw bad;
        }
        v = v * 16 + d;
      }
      out[i] = v;
    }
    return out;
  }

  public IpFamily family() {
    return family;
  }

  /** The network-order address bytes (a copy). */
  public byte[] addressBytes() {
    return Arrays.copyOf(bytes, bytes.length);
  }

  public int length() {
    return length;
  }

  /** A single address: /32 or /128. */
  public boolean isHost() {
    return length == family.bits();
  }

  /** Whether {@code other} (an address or a prefix) lies entirely within this prefix. */
  public boolean contains(IpPrefix other) {
    if (other.family != family || other.length < length) {
      return false;
    }
    // Compared in place, bit-masked: the planner asks this for every endpoint against every pod CIDR.
    int whole = length / 8;
    for (int i = 0; i < whole; i++) {
      if (bytes[i] != other.bytes[i]) {
        return false;
      }
    }
    int rest = length % 8;
    if (rest == 0) {
      return true;
    }
    int mask = (0xff << (8 - rest)) & 0xff;
    return (bytes[whole] & mask) == (other.bytes[whole] & mask);
  }

  /** The address part alone, as canonical text. */
  public String addressText() {
    return family == IpFamily.V4 ? v4Text() : v6Text();
  }

  /** Always {@code addr/len}, also for hosts (for iproute2 arguments that want a prefix). */
  public String cidrText() {
    return addressText() + "/" + length;
  }

  /** The first address as an unsigned integer; with {@link #lastAddress()} for range arithmetic. */
  public BigInteger firstAddress() {
    return new BigInteger(1, bytes);
  }

  public BigInteger lastAddress() {
    BigInteger hostMask = BigInteger.ONE.shiftLeft(family.bits() - length).subtract(BigInteger.ONE);
    return firstAddress().or(hostMask);
  }

  private String v4Text() {
    return (bytes[0] & 0xff) + "." + (bytes[1] & 0xff) + "." + (bytes[2] & 0xff) + "." + (bytes[3] & 0xff);
  }

  private String v6Text() {
    int[] g = new int[8];
    for (int i = 0; i < 8; i++) {
      g[i] = ((bytes[2 * i] & 0xff) << 8) | (bytes[2 * i + 1] & 0xff);
    }
    // RFC 5952: compress the longest run (>= 2) of zero groups, the first one on a tie.
    int bestStart = -1;
    int bestLen = 0;
    for (int i = 0; i < 8; ) {
      if (g[i] != 0) {
        i++;
        continue;
      }
      int j = i;
      while (j < 8 && g[j] == 0) {
        j++;
      }
      if (j - i > bestLen && j - i >= 2) {
        bestStart = i;
        bestLen = j - i;
      }
      i = j;
    }
    StringBuilder sb = new StringBuilder();
    // IPv4-mapped (::ffff:a.b.c.d) and IPv4-compatible (::a.b.c.d) addresses end in a dotted quad,
    // as RFC 5952 section 5 recommends and as inet_ntop (iproute2, nft) prints them.
    if (bestStart == 0 && (bestLen == 6 || bestLen == 5 && g[5] == 0xffff)) {
      return (bestLen == 5 ? "::ffff:" : "::") + (bytes[12] & 0xff) + "." + (bytes[13] & 0xff) + "."
          + (bytes[14] & 0xff) + "." + (bytes[15] & 0xff);
    }
    for (int i = 0; i < 8; i++) {
      if (i == bestStart) {
        sb.append("::");
        i += bestLen - 1;
        continue;
      }
      if (sb.length() > 0 && sb.charAt(sb.length() - 1) != ':') {
        sb.append(':');
      }
      sb.append(Integer.toHexString(g[i]));
    }
    return sb.toString();
  }

  /** Canonical text: the address alone for a host, {@code addr/len} for a network. */
  @Override
  public String toString() {
    return isHost() ? addressText() : cidrText();
  }

  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof IpPrefix p && p.hash == hash && p.length == length && Arrays.equals(p.bytes, bytes);
  }

  @Override
  public int hashCode() {
    return hash;
  }

  /** Orders by family (v4 first), then address, then length. */
  @Override
  public int compareTo(IpPrefix o) {
    int c = Long.compare(orderKey, o.orderKey);
    if (c != 0 || family == IpFamily.V4) {
      return c;
    }
    c = compareUnsigned(bytes, o.bytes);
    return c != 0 ? c : Integer.compare(length, o.length);
  }

  /** Arrays.compareUnsigned without its range checks and intrinsic dispatch, which C1 does not fold for 4 bytes. */
  private static int compareUnsigned(byte[] a, byte[] b) {
    for (int i = 0; i < a.length; i++) {
      if (a[i] != b[i]) {
        return Integer.compare(a[i] & 0xff, b[i] & 0xff);
      }
    }
    return 0;
  }
}

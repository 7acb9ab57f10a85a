package io.egressservice.netlink;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HexFormat;
import java.util.Objects;
import java.util.Optional;

/**
 * One element of an nftables set or map as the kernel holds it, read by {@link NftSetElements}.
 *
 * <p>Keys and data are the kernel's bytes in network order: 4 for an {@code ipv4_addr}, 16 for an {@code
 * ipv6_addr}, 16 NUL-padded for an {@code ifname}, the parts of a concatenation each padded to 4 bytes. An
 * interval set holds each range as two elements, a start and an end one past its last key ({@link #intervalEnd()});
 * a range that runs to the top of the key space has no end element. Concatenated ranges (kernel 5.6+) are one
 * element with an inclusive {@link #keyEnd()}. {@link NftIntervals} turns either into inclusive ranges.
 *
 * <p>The record is immutable although it holds arrays: they are copied in and every accessor returns a copy, and
 * {@code equals}, {@code hashCode} and {@code toString} go by content (hex for bytes).
 *
 * @param key the key (NFTA_SET_ELEM_KEY); empty for the catch-all element ({@link #catchAll()})
 * @param keyEnd the inclusive last key of a concatenated range (NFTA_SET_ELEM_KEY_END), empty otherwise
 * @param data the value of a data map ({@code ipv4_addr : ipv4_addr} ...), empty in a set or a verdict map
 * @param verdict the verdict of a verdict map, empty otherwise
 * @param flags NFTA_SET_ELEM_FLAGS ({@link #INTERVAL_END} ...)
 * @param comment the element's comment (libnftnl user data), empty when it has none
 */
public record SetElement(byte[] key, Optional<byte[]> keyEnd, Optional<byte[]> data, Optional<Verdict> verdict,
    int flags, Optional<String> comment) {
  /** {@code NFT_SET_ELEM_INTERVAL_END}: the element ends the range the previous key began. */
  public static final int INTERVAL_END = 1;
  /** {@code NFT_SET_ELEM_CATCHALL}: nft's {@code *} element (kernel 5.13+), which has no key. */
  public static final int CATCH_ALL = 2;

  /**
   * A verdict as the kernel encodes it (NFTA_VERDICT_CODE, NFTA_VERDICT_CHAIN); {@link #toString()} prints it as
   * nft does ({@code jump svc-1}, {@code accept}).
   */
  public record Verdict(int code, Optional<String> chain) {
    public static final int DROP = 0;
    public static final int ACCEPT = 1;
    public static final int QUEUE = 3;
    public static final int CONTINUE = -1;
    public static final int BREAK = -2;
    public static final int JUMP = -3;
    public static final int GOTO = -4;
    public static final int RETURN = -5;

    public Verdict {
      Objects.requireNonNull(chain, "chain");
    }

    @Override
    public String toString() {
      String name = switch (code) {
        case DROP -> "drop";
        case ACCEPT -> "accept";
        case QUEUE -> "queue";
        case CONTINUE -> "continue";
        case BREAK -> "break";
        case JUMP -> "jump";
        case GOTO -> "goto";
        case RETURN -> "return";
        default -> "verdict " + code;
      };
      return chain.map(c -> name + " " + c).orElse(name);
    }
  }

  public SetElement {
    key = key.clone();
    keyEnd = keyEnd.map(byte[]::clone);
    data = data.map(byte[]::clone);
    Objects.requireNonNull(verdict, "verdict");
    Objects.requireNonNull(comment, "comment");
  }

  /** A plain element: a key, no data, no flags, no comment. */
  public static SetElement of(byte[] key) {
    return new SetElement(key, Optional.empty(), Optional.empty(), Optional.empty(), 0, Optional.empty());
  }

  @Override
  public byte[] key() {
    return key.clone();
  }

  @Override
  public Optional<byte[]> keyEnd() {
    return keyEnd.map(byte[]::clone);
  }

  @Override
  public Optional<byte[]> data() {
    return data.map(byte[]::clone);
  }

  /** Whether this element ends a range (NFT_SET_ELEM_INTERVAL_END) rather than holds or begins one. */
  public boolean intervalEnd() {
    return (flags & INTERVAL_END) != 0;
  }

  /** Whether this is nft's catch-all element {@code *} (NFT_SET_ELEM_CATCHALL), which matches any key. */
  public boolean catchAll() {
    return (flags & CATCH_ALL) != 0;
  }

  /** The key as text up to its first NUL: the name of an {@code ifname} (or other string) key. */
  public String keyString() {
    int n = 0;
    while (n < key.length && key[n] != 0) {
      n++;
    }
    return new String(key, 0, n, StandardCharsets.UTF_8);
  }

  /** Compares the key with another element's, as unsigned bytes (the kernel's order of keys in a range). */
  int compareKey(SetElement other) {
    return Arrays.compareUnsigned(key, other.key);
  }

  @Override
  public boolean equals(Object o) {
    return o instanceof SetElement e && Arrays.equals(key, e.key) && sameBytes(keyEnd, e.keyEnd)
        && sameBytes(data, e.data) && verdict.equals(e.verdict) && flags == e.flags && comment.equals(e.comment);
  }

  private static boolean sameBytes(Optional<byte[]> a, Optional<byte[]> b) {
    return a.isPresent() == b.isPresent() && (a.isEmpty() || Arrays.equals(a.get(), b.get()));
  }

  @Override
  public int hashCode() {
    return Objects.hash(Arrays.hashCode(key), keyEnd.map(Arrays::hashCode), data.map(Arrays::hashCode), verdict,
        flags, comment);
  }

  @Override
  public String toString() {
    HexFormat hex = HexFormat.of();
    StringBuilder sb = new StringBuilder("SetElement[").append(catchAll() ? "*" : hex.formatHex(key));
    keyEnd.ifPresent(k -> sb.append('-').append(hex.formatHex(k)));
    data.ifPresent(d -> sb.append(" : ").append(hex.formatHex(d)));
    verdict.ifPresent(v -> sb.append(" : ").append(v));
    if (flags != 0) {
      sb.append(" flags ").append(flags);
    }
    comment.ifPresent(c -> sb.append(" comment \"").append(c).append('"'));
    return sb.append(']').toString();
  }
}

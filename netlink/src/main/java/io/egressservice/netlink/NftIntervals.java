package io.egressservice.netlink;

import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.Comparator;
import java.util.HexFormat;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collector;

/**
 * The ranges of an interval set ({@code flags interval}) from its raw elements, as nft lists them: {@code
 * 10.0.0.0/8}, {@code 192.168.1.1-192.168.1.9}, {@code 172.16.0.5}.
 *
 * <p>What the kernel holds: for a single key type (rbtree), each range as a start element and an end element one
 * past its last key (NFT_SET_ELEM_INTERVAL_END), in no promised order; a range that runs to the top of the key
 * space (255.255.255.255, ffff:...:ffff) has no end element; nft also adds an end element at key 0 when no range
 * starts there, which ends nothing. For a concatenation (pipapo, kernel 5.6+), one element per range with an
 * inclusive NFTA_SET_ELEM_KEY_END. The start element carries the range's data, verdict and comment. The
 * catch-all element {@code *} is no range and is left out: a caller that needs it finds it among the elements.
 */
public final class NftIntervals {
  private NftIntervals() {}

  /**
   * An inclusive range of keys and the element that begins it (its data, verdict, comment). Arrays are copied in
   * and out; equality by content.
   */
  public record Range(byte[] first, byte[] last, SetElement start) {
    public Range {
      first = first.clone();
      last = last.clone();
    }

    @Override
    public byte[] first() {
      return first.clone();
    }

    @Override
    public byte[] last() {
      return last.clone();
    }

    /** The range as one prefix when it is exactly one, for IPv4 (4-byte) and IPv6 (16-byte) keys. */
    public Optional<IpPrefix> prefix() {
      if (first.length != last.length || (first.length != 4 && first.length != 16)) {
        return Optional.empty();
      }
      // The prefix length: the leading bits first and last share; below it first is all zeros, last all ones.
      int bits = first.length * 8;
      int len = 0;
      while (len < bits && bit(first, len) == bit(last, len)) {
        len++;
      }
      for (int i = len; i < bits; i++) {
        if (bit(first, i) != 0 || bit(last, i) != 1) {
          return Optional.empty();
        }
      }
      return Optional.of(IpPrefix.of(first, len));
    }

    private static int bit(byte[] b, int i) {
      return (b[i >> 3] >> (7 - (i & 7))) & 1;
    }

    @Override
    public boolean equals(Object o) {
      return o instanceof Range r && Arrays.equals(first, r.first) && Arrays.equals(last, r.last)
          && start.equals(r.start);
    }

    @Override
    public int hashCode() {
      return 31 * (31 * Arrays.hashCode(first) + Arrays.hashCode(last)) + start.hashCode();
    }

    @Override
    public String toString() {
      HexFormat hex = HexFormat.of();
      return "Range[" + hex.formatHex(first) + "-" + hex.formatHex(last) + " " + start + "]";
    }
  }

  /**
   * The inclusive ranges of an interval set's elements (as {@link NftSetElements} reads them), ascending by first
   * key. A start element followed by another start (never written by nft) is taken to end just before it.
   */
  public static List<Range> ranges(Collection<SetElement> elements) {
    List<Range> out = new ArrayList<>();
    List<SetElement> bounds = new ArrayList<>(elements.size());
    for (SetElement e : elements) {
      if (e.catchAll()) {
        continue;
      }
      if (e.keyEnd().isPresent()) {
        out.add(new Range(e.key(), e.keyEnd().get(), e));
      } else {
        bounds.add(e);
      }
    }
    // At an equal key an end comes first: it closes the range before, the start opens the next (two adjacent
    // ranges that nft did not merge).
    bounds.sort(((Comparator<SetElement>) SetElement::compareKey)
        .thenComparing(e -> !e.intervalEnd()));
    for (int i = 0; i < bounds.size(); i++) {
      SetElement start = bounds.get(i);
      if (start.intervalEnd()) {
        continue; // ends nothing: the end element nft puts at 0, or one whose start is missing
      }
      byte[] last = i + 1 < bounds.size() ? predecessor(bounds.get(i + 1).key()) : allOnes(start.key().length);
      out.add(new Range(start.key(), last, start));
    }
    out.sort((a, b) -> Arrays.compareUnsigned(a.first, b.first));
    return List.copyOf(out);
  }

  /** {@link #ranges} as a collector for {@link NftSetElements#collect}. */
  public static Collector<SetElement, ?, List<Range>> collector() {
    return Collector.of(ArrayList<SetElement>::new, List::add, (a, b) -> {
      a.addAll(b);
      return a;
    }, NftIntervals::ranges);
  }

  /** The key before {@code key} (an end element's key is one past its range). */
  static byte[] predecessor(byte[] key) {
    byte[] out = key.clone();
    for (int i = out.length - 1; i >= 0; i--) {
      if (out[i]-- != 0) {
        return out;
      }
    }
    throw new IllegalArgumentException("an end element at key 0 ends no range");
  }

  private static byte[] allOnes(int length) {
    byte[] out = new byte[length];
    Arrays.fill(out, (byte) 0xff);
    return out;
  }
}

package io.egressservice.nft;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.EgressNftables.IpRange;
import io.egressservice.nft.table.NftTable.Element;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.List;

/**
 * The address arithmetic of interval sets: merging ranges the way nft's {@code auto-merge} would (nft 1.0.6
 * cannot ask for it in JSON, so the agent merges before it adds), comparing coverage, and writing a range as
 * the smallest nft element (an address, a prefix or a range).
 */
final class IpRanges {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  static final Comparator<IpRange> RANGE_ORDER =
      Comparator.comparing(IpRange::family).thenComparing(r -> r.first().firstAddress());

  private IpRanges() {}

  /**
   * Whether the observed set elements cover exactly the addresses of the desired prefixes. Compares
   * merged ranges, so 10.0.0.0/24 + 10.0.1.0/24 equals 10.0.0.0/23 and overlaps do not matter.
   */
  static boolean sameCoverage(List<IpRange> observed, List<IpPrefix> desired) {
    return merge(observed).equals(merge(desired.stream().map(IpRange::of).toList()));
  }

  /** Sorted, disjoint and non-adjacent ranges covering exactly the given ranges. */
  static List<IpRange> merge(Collection<IpRange> ranges) {
    List<IpRange> sorted = new ArrayList<>(ranges);
    sorted.sort(RANGE_ORDER);
    List<IpRange> out = new ArrayList<>();
    IpRange cur = null;
    for (IpRange r : sorted) {
      if (cur != null
          && cur.family() == r.family()
          && r.first().firstAddress().compareTo(cur.last().firstAddress().add(BigInteger.ONE)) <= 0) {
        if (r.last().firstAddress().compareTo(cur.last().firstAddress()) > 0) {
          cur = new IpRange(cur.first(), r.last());
        }
      } else {
        if (cur != null) {
          out.add(cur);
        }
        cur = r;
      }
    }
    if (cur != null) {
      out.add(cur);
    }
    return out;
  }

  /** The libnftables-json element for {@code r}: an address, a prefix when it is one, else a range. */
  static JsonNode intervalElement(IpRange r) {
    BigInteger first = r.first().firstAddress();
    BigInteger last = r.last().firstAddress();
    if (first.equals(last)) {
      return F.textNode(r.first().addressText());
    }
    BigInteger size = last.subtract(first).add(BigInteger.ONE);
    if (size.bitCount() == 1 && first.mod(size).signum() == 0) {
      int len = r.family().bits() - (size.bitLength() - 1);
      ObjectNode p = F.objectNode();
      p.putObject("prefix").put("addr", r.first().addressText()).put("len", len);
      return p;
    }
    ObjectNode range = F.objectNode();
    range.putArray("range").add(r.first().addressText()).add(r.last().addressText());
    return range;
  }

  /** The elements of an interval set that hold exactly the addresses of {@code prefixes} of {@code family}. */
  static List<Element> intervalElements(Collection<IpPrefix> prefixes, IpFamily family) {
    return merge(prefixes.stream().filter(p -> p.family() == family).map(IpRange::of).toList()).stream()
        .map(r -> Element.of(intervalElement(r))).toList();
  }

  /** The host prefix of {@code address} (an unsigned number) in {@code family}. */
  static IpPrefix host(BigInteger address, IpFamily family) {
    byte[] raw = address.toByteArray();
    byte[] bytes = new byte[family.byteLength()];
    int n = Math.min(raw.length, bytes.length);
    System.arraycopy(raw, raw.length - n, bytes, bytes.length - n, n);
    return IpPrefix.host(bytes);
  }
}

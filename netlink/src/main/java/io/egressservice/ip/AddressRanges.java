package io.egressservice.ip;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Prefixes as disjoint address ranges per family, for "is this address in any of them" in O(log n): a host move
 * checks every flow of its endpoints against the in-cluster list, which holds every node's address in a large
 * cluster.
 */
public final class AddressRanges {
  private final Map<IpFamily, TreeMap<BigInteger, BigInteger>> byFamily = new EnumMap<>(IpFamily.class);

  public AddressRanges(Collection<IpPrefix> prefixes) {
    for (IpFamily f : IpFamily.values()) {
      List<IpPrefix> of = new ArrayList<>(prefixes.stream().filter(p -> p.family() == f).toList());
      of.sort(Comparator.comparing(IpPrefix::firstAddress));
      TreeMap<BigInteger, BigInteger> ranges = new TreeMap<>();
      BigInteger first = null;
      BigInteger last = null;
      for (IpPrefix p : of) {
        if (last != null && p.firstAddress().compareTo(last.add(BigInteger.ONE)) <= 0) {
          last = last.max(p.lastAddress());
        } else {
          if (first != null) {
            ranges.put(first, last);
          }
          first = p.firstAddress();
          last = p.lastAddress();
        }
      }
      if (first != null) {
        ranges.put(first, last);
      }
      byFamily.put(f, ranges);
    }
  }

  /** Whether the address {@code a} lies in one of the prefixes. */
  public boolean contains(IpPrefix a) {
    BigInteger x = a.firstAddress();
    Map.Entry<BigInteger, BigInteger> r = byFamily.get(a.family()).floorEntry(x);
    return r != null && x.compareTo(r.getValue()) <= 0;
  }
}

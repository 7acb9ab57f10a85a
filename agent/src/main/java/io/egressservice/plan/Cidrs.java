package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.TreeSet;

/** Prefix arithmetic for the in-cluster destinations. */
public final class Cidrs {
  private Cidrs() {}

  /**
   * The smallest sorted list of prefixes covering exactly the union of {@code prefixes}: contained
   * prefixes dropped, sibling halves merged (10.0.0.0/25 + 10.0.0.128/25 = 10.0.0.0/24), repeatedly.
   */
  public static List<IpPrefix> aggregate(Collection<IpPrefix> prefixes) {
    TreeSet<IpPrefix> sorted = new TreeSet<>(prefixes);
    List<IpPrefix> out = new ArrayList<>();
    boolean merged = true;
    List<IpPrefix> current = new ArrayList<>(sorted);
    while (merged) {
      merged = false;
      out = new ArrayList<>();
      for (IpPrefix p : current) {
        if (!out.isEmpty() && out.get(out.size() - 1).contains(p)) {
          continue;
        }
        if (!out.isEmpty()) {
          IpPrefix last = out.get(out.size() - 1);
          if (last.family() == p.family() && last.length() == p.length() && last.length() > 0) {
            IpPrefix parent = IpPrefix.of(last.addressBytes(), last.length() - 1);
            if (parent.contains(p)) {
              out.set(out.size() - 1, parent);
              merged = true;
              continue;
            }
          }
        }
        out.add(p);
      }
      current = new ArrayList<>(new TreeSet<>(out));
    }
    return List.copyOf(current);
  }

  /** Whether any of {@code prefixes} contains {@code address}. */
  public static boolean anyContains(Collection<IpPrefix> prefixes, IpPrefix address) {
    for (IpPrefix p : prefixes) {
      if (p.contains(address)) {
        return true;
      }
    }
    return false;
  }
}

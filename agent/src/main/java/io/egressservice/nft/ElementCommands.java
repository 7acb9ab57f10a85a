package io.egressservice.nft;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/** The element changes of the per-family address sets ({@code <set>v4}, {@code <set>v6}) of an inet table. */
final class ElementCommands {
  private ElementCommands() {}

  /** Appends {@code <verb> element inet <table> <set>v4 { ... }} (and v6) for the elements of each family. */
  static void append(StringBuilder sb, String verb, String table, String set, List<IpPrefix> elements) {
    for (IpFamily f : IpFamily.values()) {
      List<String> of = elements.stream().filter(p -> p.family() == f).map(IpPrefix::addressText).distinct()
          .sorted().toList();
      if (!of.isEmpty()) {
        sb.append(verb).append(" element inet ").append(table).append(' ').append(set)
            .append(f == IpFamily.V4 ? "v4" : "v6").append(" { ").append(String.join(", ", of)).append(" }\n");
      }
    }
  }

  /** The elements of {@code a} not in {@code b}. */
  static List<IpPrefix> difference(Set<IpPrefix> a, Set<IpPrefix> b) {
    List<IpPrefix> out = new ArrayList<>();
    for (IpPrefix p : a) {
      if (!b.contains(p)) {
        out.add(p);
      }
    }
    return out;
  }
}

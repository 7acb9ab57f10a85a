package io.egressservice.nft;

import io.egressservice.kernel.NftException;
import io.egressservice.kernel.Nftables;
import static io.egressservice.nft.ElementCommands.difference;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collectors;

/**
 * The table of {@code --no-host=drop}: the local endpoints of LoadBalancerIP services without a host, whose
 * packets out of the cluster are dropped and counted per service, in a table of its own so the SNAT table's
 * fixed shape stays as it is:
 *
 * <pre>
 * table inet egress_service_agent_nohost {
 *   counter s0 { comment "shop/web" }                   # one per service
 *   set in_cluster_v4 { type ipv4_addr; flags interval; elements = { ... } }
 *   set s0_v4 { type ipv4_addr; elements = { 10.128.2.5 } }
 *   chain forward {
 *     type filter hook forward priority filter - 10; policy accept;
 *     ip saddr @s0_v4 ip daddr != @in_cluster_v4 ct direction original counter name "s0" drop
 *   }
 * }
 * </pre>
 *
 * Only the original direction is dropped: replies of the pods to connections from outside (the Service's own
 * ingress) still flow, and so does everything inside the cluster. The table is rare and small (it exists only
 * while a service has no host), so it is written whole in one transaction when it changes; the counters' values
 * before a rewrite are carried over here, so {@link #droppedPackets()} only grows.
 */
public final class NoHostNftables {
  public static final String TABLE = "egress_service_agent_nohost";
  /** The counter key of steered packets dropped because they would have left without the LB IP. */
  public static final String STEERED_GUARD = "(left without the LB IP)";

  /** One held endpoint: the service ({@code namespace/name}) and the source address. */
  public record Hold(String service, IpPrefix source) {
    public Hold {
      Objects.requireNonNull(service);
      Objects.requireNonNull(source);
    }
  }

  private final Nftables nft;
  private final Map<String, Long> carried = new HashMap<>();
  /** What the table holds apart from its element sets, as last written; empty: unknown (write it whole). */
  private Optional<Shape> written = Optional.empty();
  /** With a guard: the {@code lb_*} and {@code ours_*} elements as last written. */
  private Set<IpPrefix> writtenLb = new HashSet<>();
  private Set<IpPrefix> writtenOurs = new HashSet<>();

  /** The table's structure; its {@code lb_*} and {@code ours_*} sets change by element, not by a rewrite. */
  private record Shape(Set<Hold> holds, List<IpPrefix> inCluster, boolean guard) {
    static final Shape ABSENT = new Shape(Set.of(), List.of(), false);

    boolean absent() {
      return holds.isEmpty() && !guard;
    }
  }

  public NoHostNftables(Nftables nft) {
    this.nft = Objects.requireNonNull(nft);
  }

  /**
   * Makes the table hold exactly {@code holds} ({@code inCluster}: the destinations that still flow). Writes only
   * when the wanted table differs from the last one written, or always with {@code verify} when it is missing.
   */
  public synchronized void sync(List<Hold> holds, List<IpPrefix> inCluster, boolean verify) {
    sync(holds, inCluster, List.of(), false, verify);
  }

  /**
   * As {@link #sync(List, List, boolean)}; on a node that receives steered traffic ({@code guard}), packets that
   * came in over the steering device and leave the cluster with a source other than one of {@code lbIps} (the LB
   * IPs this node SNATs to) are dropped after NAT: a steered flow that reaches a node before (or after) it is the
   * host would otherwise leave with the CNI's masquerade. Both guard rules match the original direction only: an
   * endpoint's answers to connections made to its own address (a routed pod IP, a host on the node subnet, a load
   * balancer that targets pods) leave with that address by design, and must.
   */
  public synchronized void sync(List<Hold> holds, List<IpPrefix> inCluster, List<IpPrefix> lbIps, boolean guard,
      boolean verify) {
    sync(holds, inCluster, lbIps, List.of(), guard, verify);
  }

  /**
   * As above; {@code ours} are the sources this node SNATs or steers: after NAT, a packet of theirs that leaves
   * the cluster still with its own address, and not over the steering device, is dropped (a flow whose NAT was
   * chosen under the old treatment, in the moment before its conntrack entry is deleted). When only the LB IPs
   * and our sources changed (endpoint churn), their elements are added and deleted in one transaction; the
   * table is written whole only when its holds, in-cluster set or guard change.
   */
  public synchronized void sync(List<Hold> holds, List<IpPrefix> inCluster, List<IpPrefix> lbIps,
      List<IpPrefix> ours, boolean guard, boolean verify) {
    Shape want = new Shape(Set.copyOf(holds), List.copyOf(inCluster), guard);
    if (want.absent()) {
      want = Shape.ABSENT;
    }
    if (verify) {
      boolean present = nft.tablePresent("inet", TABLE);
      if (!present) {
        written = Optional.of(Shape.ABSENT);
      } else if (written.isEmpty() || written.get().absent()) {
        written = Optional.empty(); // someone else's change (or an earlier run's table): written whole
      }
    }
    if (written.isPresent() && written.get().equals(want)) {
      if (want.guard()) {
        Set<IpPrefix> lb = new HashSet<>(lbIps);
        Set<IpPrefix> our = new HashSet<>(ours);
        updateElements(difference(lb, writtenLb), difference(writtenLb, lb), difference(our, writtenOurs),
            difference(writtenOurs, our));
      }
      return;
    }
    boolean present = written.isEmpty() || !written.get().absent();
    if (present) {
      carryCounters();
    }
    written = Optional.empty();
    if (want.absent()) {
      nft.runScript("add table inet " + TABLE + "\ndelete table inet " + TABLE + "\n");
    } else {
      nft.runScript("add table inet " + TABLE + "\ndelete table inet " + TABLE + "\n"
          + script(holds, inCluster, lbIps, ours, guard));
    }
    written = Optional.of(want);
    writtenLb = want.guard() ? new HashSet<>(lbIps) : new HashSet<>();
    writtenOurs = want.guard() ? new HashSet<>(ours) : new HashSet<>();
  }

  /**
   * The fast path: the table keeps its holds, in-cluster set and guard; the given LB IPs and sources come and go.
   * Returns false (and changes nothing) when the table is not known to have that shape with a guard: the
   * caller then runs {@link #sync} with the whole lists.
   */
  public synchronized boolean updateElements(Collection<IpPrefix> lbAdded, Collection<IpPrefix> lbRemoved,
      Collection<IpPrefix> oursAdded, Collection<IpPrefix> oursRemoved) {
    if (written.isEmpty() || !written.get().guard()) {
      return false;
    }
    StringBuilder sb = new StringBuilder();
    ElementCommands.append(sb, "add", TABLE, "lb_", lbAdded.stream().filter(p -> !writtenLb.contains(p)).toList());
    ElementCommands.append(sb, "delete", TABLE, "lb_", lbRemoved.stream().filter(writtenLb::contains).toList());
    ElementCommands.append(sb, "add", TABLE, "ours_",
        oursAdded.stream().filter(p -> !writtenOurs.contains(p)).toList());
    ElementCommands.append(sb, "delete", TABLE, "ours_", oursRemoved.stream().filter(writtenOurs::contains).toList());
    if (sb.length() == 0) {
      return true;
    }
    try {
      nft.runScript(sb.toString());
    } catch (RuntimeException e) {
      written = Optional.empty(); // the next sync writes it whole
      throw e;
    }
    writtenLb.addAll(lbAdded);
    writtenLb.removeAll(lbRemoved);
    writtenOurs.addAll(oursAdded);
    writtenOurs.removeAll(oursRemoved);
    return true;
  }

  /** Packets dropped per service ({@code namespace/name}) since this instance started. */
  public synchronized Map<String, Long> droppedPackets() {
    Map<String, Long> out = new TreeMap<>(carried);
    if (written.isEmpty() || !written.get().absent()) {
      current().forEach((k, v) -> out.merge(k, v, Long::sum));
    }
    return out;
  }

  /** Removes the table (cleanup). */
  public synchronized void delete() {
    nft.runScript("add table inet " + TABLE + "\ndelete table inet " + TABLE + "\n");
    written = Optional.of(Shape.ABSENT);
  }

  private void carryCounters() {
    try {
      current().forEach((k, v) -> carried.merge(k, v, Long::sum));
    } catch (NftException e) {
      // the counts since the last read are lost; the table is rewritten anyway
    }
  }

  private Map<String, Long> current() {
    Map<String, Long> out = new HashMap<>();
    nft.countersIfPresent("inet", TABLE).orElse(List.of())
        .forEach(c -> c.comment().ifPresent(service -> out.merge(service, c.packets(), Long::sum)));
    return out;
  }

  static String script(List<Hold> holds, List<IpPrefix> inCluster, List<IpPrefix> lbIps, List<IpPrefix> ours,
      boolean guard) {
    Map<String, List<Hold>> byService = new TreeMap<>(holds.stream().collect(Collectors.groupingBy(Hold::service)));
    StringBuilder sb = new StringBuilder("table inet ").append(TABLE).append(" {\n");
    for (IpFamily f : IpFamily.values()) {
      String type = f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
      sb.append("  set in_cluster_").append(f == IpFamily.V4 ? "v4" : "v6").append(" { type ").append(type)
          .append("; flags interval; ");
      List<String> elems = EgressNftables.merge(inCluster.stream().filter(p -> p.family() == f)
          .map(EgressNftables.IpRange::of).toList()).stream()
          .map(r -> r.first().equals(r.last()) ? r.first().addressText()
              : r.first().addressText() + "-" + r.last().addressText())
          .toList();
      if (!elems.isEmpty()) {
        sb.append("elements = { ").append(String.join(", ", elems)).append(" } ");
      }
      sb.append("}\n");
    }
    StringBuilder rules = new StringBuilder();
    int i = 0;
    for (Map.Entry<String, List<Hold>> e : byService.entrySet()) {
      String id = "s" + i++;
      sb.append("  counter ").append(id).append(" { comment \"").append(quote(e.getKey())).append("\" }\n");
      for (IpFamily f : IpFamily.values()) {
        List<String> sources = e.getValue().stream().map(Hold::source).filter(p -> p.family() == f)
            .map(IpPrefix::addressText).distinct().sorted().toList();
        if (sources.isEmpty()) {
          continue;
        }
        String fam = f == IpFamily.V4 ? "v4" : "v6";
        String ip = f == IpFamily.V4 ? "ip" : "ip6";
        sb.append("  set ").append(id).append('_').append(fam).append(" { type ")
            .append(f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr").append("; elements = { ")
            .append(String.join(", ", sources)).append(" } }\n");
        rules.append("    ").append(ip).append(" saddr @").append(id).append('_').append(fam).append(' ')
            .append(ip).append(" daddr != @in_cluster_").append(fam)
            .append(" ct direction original counter name \"").append(id).append("\" drop\n");
      }
    }
    sb.append("  chain forward {\n    type filter hook forward priority filter - 10; policy accept;\n")
        .append(rules).append("  }\n");
    if (guard) {
      sb.append("  counter steered_unsnatted { comment \"").append(STEERED_GUARD).append("\" }\n");
      StringBuilder g = new StringBuilder();
      for (IpFamily f : IpFamily.values()) {
        String fam = f == IpFamily.V4 ? "v4" : "v6";
        String ip = f == IpFamily.V4 ? "ip" : "ip6";
        List<String> mine = lbIps.stream().filter(p -> p.family() == f).map(IpPrefix::addressText).distinct()
            .sorted().toList();
        sb.append("  set lb_").append(fam).append(" { type ").append(f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr")
            .append("; ").append(mine.isEmpty() ? "" : "elements = { " + String.join(", ", mine) + " } ")
            .append("}\n");
        g.append("    iifname \"").append(EgressNftables.STEERING_DEVICE).append("\" oifname != \"")
            .append(EgressNftables.STEERING_DEVICE).append("\" ").append(ip).append(" daddr != @in_cluster_")
            .append(fam).append(' ').append(ip).append(" saddr != @lb_").append(fam)
            .append(" ct direction original counter name \"steered_unsnatted\" drop\n");
        List<String> sources = ours.stream().filter(p -> p.family() == f).map(IpPrefix::addressText).distinct()
            .sorted().toList();
        // Declared even when empty, so that sources come and go by element (updateElements), not by a rewrite.
        sb.append("  set ours_").append(fam).append(" { type ").append(f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr")
            .append("; ").append(sources.isEmpty() ? "" : "elements = { " + String.join(", ", sources) + " } ")
            .append("}\n");
        g.append("    oifname != \"").append(EgressNftables.STEERING_DEVICE).append("\" ").append(ip)
            .append(" saddr @ours_").append(fam).append(' ').append(ip).append(" daddr != @in_cluster_").append(fam)
            .append(" ct direction original counter name \"steered_unsnatted\" drop\n");
      }
      sb.append("  chain postrouting {\n    type filter hook postrouting priority srcnat + 10; policy accept;\n")
          .append(g).append("  }\n");
    }
    sb.append("}\n");
    return sb.toString();
  }

  private static String quote(String s) {
    return s.replace("\"", "");
  }
}

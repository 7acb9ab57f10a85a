package io.egressservice.nft;

import static io.egressservice.nft.table.Expr.counter;
import static io.egressservice.nft.table.Expr.ct;
import static io.egressservice.nft.table.Expr.drop;
import static io.egressservice.nft.table.Expr.in;
import static io.egressservice.nft.table.Expr.is;
import static io.egressservice.nft.table.Expr.isNot;
import static io.egressservice.nft.table.Expr.meta;
import static io.egressservice.nft.table.Expr.notIn;
import static io.egressservice.nft.table.Expr.payload;
import static io.egressservice.nft.table.Expr.rule;
import static io.egressservice.nft.table.Expr.text;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.Nftables;
import io.egressservice.nft.table.CarriedCounters;
import io.egressservice.nft.table.NftTable;
import io.egressservice.nft.table.NftTable.Chain;
import io.egressservice.nft.table.NftTable.Element;
import io.egressservice.nft.table.NftTable.NftSet;
import io.egressservice.nft.table.NftTable.SetChange;
import io.egressservice.nft.table.TableWriter;
import java.util.ArrayList;
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
 * while a service has no host), so it is written whole in one transaction when it changes, but for the LB IPs and
 * our sources of its guard, which come and go by element; the counters' values before a rewrite are carried over
 * here, so {@link #droppedPackets()} only grows.
 */
public final class NoHostNftables {
  public static final String TABLE = "egress_service_agent_nohost";
  /** The counter key of steered packets dropped because they would have left without the LB IP. */
  public static final String STEERED_GUARD = "(left without the LB IP)";
  /** The guard's sets, whose elements come and go without a rewrite (the guard's lines themselves stay). */
  private static final Set<String> BY_ELEMENT = Set.of("lb_v4", "lb_v6", "ours_v4", "ours_v6");

  /** One held endpoint: the service ({@code namespace/name}) and the source address. */
  public record Hold(String service, IpPrefix source) {
    public Hold {
      Objects.requireNonNull(service);
      Objects.requireNonNull(source);
    }
  }

  private final Nftables nft;
  private final CarriedCounters counters;
  /** The table as last written: empty: unknown (written whole next); {@code Optional.of(Optional.empty())}: absent. */
  private Optional<Optional<NftTable>> written = Optional.empty();
  /**
   * The keys of the by-element sets' elements as the kernel holds them while {@link #written} holds a table: the fast
   * path keeps them in step by change (O(change), not O(elements), per endpoint update); {@link #written}'s copies of
   * those sets are then out of date ({@link #elementsMoved}) until the next {@link #sync} brings them in.
   */
  private final Map<String, Set<String>> held = new HashMap<>();
  private boolean elementsMoved;

  public NoHostNftables(Nftables nft) {
    this.nft = Objects.requireNonNull(nft);
    this.counters = CarriedCounters.byComment(nft, "inet", TABLE);
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
    Optional<NftTable> want = holds.isEmpty() && !guard ? Optional.empty()
        : Optional.of(table(holds, inCluster, lbIps, ours, guard));
    if (verify) {
      if (!nft.tablePresent("inet", TABLE)) {
        remember(Optional.empty());
      } else if (written.isEmpty() || written.get().isEmpty()) {
        forget(); // someone else's change (or an earlier run's table): written whole
      }
    }
    if (written.isPresent() && written.get().isEmpty() && want.isEmpty()) {
      return;
    }
    Optional<NftTable> known = written.orElse(Optional.empty()).map(this::withHeldElements);
    if (want.isPresent() && TableWriter.sameShape(want.get(), known, BY_ELEMENT)) {
      JsonNode changes = TableWriter.transaction(want.get(), known, BY_ELEMENT);
      if (!TableWriter.isEmpty(changes)) {
        runElements(changes);
      }
      remember(want);
      return;
    }
    if (written.isEmpty() || written.get().isPresent()) {
      counters.carry();
    }
    forget();
    nft.run(want.isEmpty() ? TableWriter.remove("inet", TABLE) : TableWriter.replace(want.get()));
    remember(want);
  }

  /** {@code table} as written, with the by-element sets' elements as the fast path has left them since. */
  private NftTable withHeldElements(NftTable table) {
    if (!elementsMoved) {
      return table;
    }
    List<SetChange> since = new ArrayList<>();
    for (String set : BY_ELEMENT) {
      Optional<NftSet> was = table.set(set);
      if (was.isEmpty()) {
        continue;
      }
      Set<String> writtenKeys = was.get().elements().stream().map(e -> e.key().asText()).collect(Collectors.toSet());
      Set<String> now = held.getOrDefault(set, Set.of());
      since.add(new SetChange(set, now.stream().filter(k -> !writtenKeys.contains(k)).map(Element::of).toList(),
          writtenKeys.stream().filter(k -> !now.contains(k)).map(Element::of).toList()));
    }
    return table.withChanges(since);
  }

  /** The kernel holds {@code table} (empty: no table). */
  private void remember(Optional<NftTable> table) {
    written = Optional.of(table);
    held.clear();
    elementsMoved = false;
    table.ifPresent(t -> BY_ELEMENT.forEach(set -> t.set(set).ifPresent(s -> held.put(set,
        s.elements().stream().map(e -> e.key().asText()).collect(Collectors.toCollection(HashSet::new))))));
  }

  /** What the kernel holds is not known (the next sync writes the table whole). */
  private void forget() {
    written = Optional.empty();
    held.clear();
    elementsMoved = false;
  }

  /**
   * The fast path: the table keeps its holds, in-cluster set and guard; the given LB IPs and sources come and go.
   * Returns false (and changes nothing) when the table is not known to have that shape with a guard: the
   * caller then runs {@link #sync} with the whole lists.
   */
  public synchronized boolean updateElements(Collection<IpPrefix> lbAdded, Collection<IpPrefix> lbRemoved,
      Collection<IpPrefix> oursAdded, Collection<IpPrefix> oursRemoved) {
    if (written.isEmpty() || written.get().isEmpty() || !held.containsKey("lb_v4")) {
      return false;
    }
    List<SetChange> changes = new ArrayList<>();
    for (IpFamily f : IpFamily.values()) {
      changes.add(change("lb_" + fam(f), f, lbAdded, lbRemoved));
      changes.add(change("ours_" + fam(f), f, oursAdded, oursRemoved));
    }
    if (changes.stream().allMatch(SetChange::isEmpty)) {
      return true;
    }
    runElements(TableWriter.elementChanges("inet", TABLE, changes));
    for (SetChange c : changes) {
      Set<String> keys = held.computeIfAbsent(c.set(), k -> new HashSet<>());
      c.removed().forEach(e -> keys.remove(e.key().asText()));
      c.added().forEach(e -> keys.add(e.key().asText()));
    }
    elementsMoved = true;
    return true;
  }

  /** The elements of {@code family} to add that the set lacks, and to delete that it holds (O(change)). */
  private SetChange change(String set, IpFamily family, Collection<IpPrefix> added, Collection<IpPrefix> removed) {
    Set<String> keys = held.getOrDefault(set, Set.of());
    return new SetChange(set, addresses(added, family).filter(a -> !keys.contains(a)).map(Element::of).toList(),
        addresses(removed, family).filter(keys::contains).map(Element::of).toList());
  }

  private void runElements(JsonNode changes) {
    try {
      nft.run(changes);
    } catch (RuntimeException e) {
      forget(); // the next sync writes it whole
      throw e;
    }
  }

  /** Packets dropped per service ({@code namespace/name}) since this instance started. */
  public synchronized Map<String, Long> droppedPackets() {
    return counters.total(written.isEmpty() || written.get().isPresent());
  }

  /** Removes the table (cleanup). */
  public synchronized void delete() {
    nft.run(TableWriter.remove("inet", TABLE));
    remember(Optional.empty());
  }

  /** The table (package-visible for its test). */
  static NftTable table(List<Hold> holds, List<IpPrefix> inCluster, List<IpPrefix> lbIps, List<IpPrefix> ours,
      boolean guard) {
    Map<String, List<Hold>> byService = new TreeMap<>(holds.stream().collect(Collectors.groupingBy(Hold::service)));
    NftTable table = NftTable.of("inet", TABLE);
    for (IpFamily f : IpFamily.values()) {
      table = table.withSet(NftSet.of("in_cluster_" + fam(f), type(f)).withFlags("interval")
          .withElements(IpRanges.intervalElements(inCluster, f)));
    }
    Chain forward = Chain.base("forward", "filter", "forward", -10);
    int i = 0;
    for (Map.Entry<String, List<Hold>> e : byService.entrySet()) {
      String id = "s" + i++;
      table = table.withCounter(id, e.getKey().replace("\"", ""));
      for (IpFamily f : IpFamily.values()) {
        List<Element> sources = addresses(e.getValue().stream().map(Hold::source).toList(), f).map(Element::of)
            .toList();
        if (sources.isEmpty()) {
          continue;
        }
        String set = id + '_' + fam(f);
        table = table.withSet(NftSet.of(set, type(f)).withElements(sources));
        forward = forward.withRule(rule(in(payload(f.nftName(), "saddr"), set),
            notIn(payload(f.nftName(), "daddr"), "in_cluster_" + fam(f)), is(ct("direction"), text("original")),
            counter(id), drop()));
      }
    }
    table = table.withChain(forward);
    if (!guard) {
      return table;
    }
    table = table.withCounter("steered_unsnatted", STEERED_GUARD);
    Chain postrouting = Chain.base("postrouting", "filter", "postrouting", 110);
    String dev = EgressNftables.STEERING_DEVICE;
    for (IpFamily f : IpFamily.values()) {
      String ip = f.nftName();
      String cluster = "in_cluster_" + fam(f);
      // Declared even when empty, so that LB IPs and sources come and go by element, not by a rewrite.
      table = table.withSet(NftSet.of("lb_" + fam(f), type(f))
              .withElements(addresses(lbIps, f).map(Element::of).toList()))
          .withSet(NftSet.of("ours_" + fam(f), type(f)).withElements(addresses(ours, f).map(Element::of).toList()));
      postrouting = postrouting.withRule(rule(is(meta("iifname"), text(dev)), isNot(meta("oifname"), text(dev)),
          notIn(payload(ip, "daddr"), cluster), notIn(payload(ip, "saddr"), "lb_" + fam(f)),
          is(ct("direction"), text("original")), counter("steered_unsnatted"), drop()));
      postrouting = postrouting.withRule(rule(isNot(meta("oifname"), text(dev)), in(payload(ip, "saddr"), "ours_" + fam(f)),
          notIn(payload(ip, "daddr"), cluster), is(ct("direction"), text("original")),
          counter("steered_unsnatted"), drop()));
    }
    return table.withChain(postrouting);
  }

  /** The distinct addresses of {@code family}, sorted as text. */
  private static java.util.stream.Stream<String> addresses(Collection<IpPrefix> all, IpFamily family) {
    return all.stream().filter(p -> p.family() == family).map(IpPrefix::addressText).distinct().sorted();
  }

  private static String fam(IpFamily f) {
    return f == IpFamily.V4 ? "v4" : "v6";
  }

  private static String type(IpFamily f) {
    return f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
  }
}

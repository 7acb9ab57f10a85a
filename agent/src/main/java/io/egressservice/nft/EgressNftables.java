package io.egressservice.nft;

import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.NftException;
import io.egressservice.kernel.Kernel;
import io.egressservice.kernel.Nftables;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.EgressListing.Listing;
import io.egressservice.nft.EgressListing.ObjectStatus;
import io.egressservice.nft.EgressListing.Observed;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * The SNAT table the agent owns (DESIGN.md section 2; the guard, no-host and drain tables are their own classes):
 *
 * <pre>
 * table inet egress_service_agent {
 *   map snat_v4 { type ipv4_addr : ipv4_addr; }          # endpoint -> LB IP, comment "ns/name"
 *   map snat_v6 { type ipv6_addr : ipv6_addr; }
 *   set in_cluster_v4 { type ipv4_addr; flags interval; }
 *   set in_cluster_v6 { type ipv6_addr; flags interval; }
 *   chain postrouting {
 *     type nat hook postrouting priority srcnat - 10; policy accept;   # priority 90
 *     oifname "egress-vx" snat ip to ip saddr      # steered: identity NAT, so no later masquerade runs
 *     oifname "egress-vx" snat ip6 to ip6 saddr
 *     ip daddr @in_cluster_v4 return
 *     ip6 daddr @in_cluster_v6 return
 *     snat ip to ip saddr map @snat_v4
 *     snat ip6 to ip6 saddr map @snat_v6
 *   }
 * }
 * </pre>
 *
 * The chain is static; everything that changes is a map or set element, so the per-packet cost is
 * a hash/interval lookup (O(1) in the number of endpoints) and a change of one endpoint is one
 * element in one transaction.
 *
 * <p>nft 1.0.6 quirks handled here:
 *
 * <ul>
 *   <li>JSON input cannot express {@code auto-merge} (neither as a key nor a set flag; it is silently
 *       dropped or rejected) and JSON listings do not show it. The agent therefore merges in-cluster
 *       prefixes itself into disjoint, non-adjacent ranges before adding them, which is what
 *       auto-merge would do; sets created by this class carry {@code flags interval} only.
 *   <li>{@code destroy} (delete-if-present) does not exist in nft 1.0.6 (added in 1.0.8), and
 *       {@code delete element} of an absent element fails the whole batch with ENOENT. {@link #apply}
 *       plans on a current listing (the cached one while the nftables generation is unchanged, see
 *       {@link #observe()}) and only deletes elements that are there.
 *   <li>{@code add element} with an existing key and a different value fails with EEXIST, so a
 *       changed element is a delete and an add in the same transaction.
 * </ul>
 *
 * <p>This class is the table's API, its value types and its listing cache; the fixed shape is {@link
 * EgressTableLayout}, reading a listing {@link EgressListing}, working out a transaction {@link
 * SnatTransaction}, and the interval-set arithmetic {@link IpRanges}.
 */
public final class EgressNftables implements AutoCloseable {
  public static final String TABLE = "egress_service_agent";
  public static final String FAMILY = "inet";
  public static final String CHAIN = "postrouting";
  /** {@code srcnat - 10}: before kube-proxy's / the CNI's masquerade at srcnat (100). */
  public static final int CHAIN_PRIORITY = 90;
  /** The steering device ({@code SteeringPlan.DEVICE}); the nft package does not depend on the plan. */
  public static final String STEERING_DEVICE = "egress-vx";
  /** nft limits comments to 128 bytes. */
  public static final int MAX_COMMENT_BYTES = 128;

  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /**
   * A cached listing is never reused after this long, whatever the generation says: a bounded
   * safety net (one listing a minute costs little) against anything the generation does not capture.
   */
  public static final long MAX_LISTING_AGE_NANOS = 60_000_000_000L;

  private final Nftables client;
  private final ListingCache<Listing> cache;

  private EgressNftables(Nftables client, GenerationSource generation) {
    this.client = client;
    this.cache = new ListingCache<>(generation, MAX_LISTING_AGE_NANOS, System::nanoTime);
  }

  /**
   * The table of {@code kernel}, read through a libnftables context of its own; neither read nor written yet. The
   * nftables generation ({@link Kernel#openGeneration}, closed with this object) lets an unchanged table go unlisted;
   * a source that fails makes every {@link #observe()} and {@link #apply} list the table.
   */
  public static EgressNftables open(Kernel kernel) {
    return ListingCache.openWithGeneration(kernel, EgressNftables::new);
  }

  /** The same through {@code client}, the generation read from {@code generation} (both closed with this object). */
  public static EgressNftables open(Nftables client, GenerationSource generation) {
    return new EgressNftables(client, generation);
  }

  // ---------------------------------------------------------------- values

  /** One SNAT map element: pod (endpoint) address -> LoadBalancer IP, commented {@code namespace/name}. */
  public record SnatElement(IpPrefix source, IpPrefix target, String comment) {
    public SnatElement {
      Objects.requireNonNull(source, "source");
      Objects.requireNonNull(target, "target");
      Objects.requireNonNull(comment, "comment");
      if (!source.isHost() || !target.isHost()) {
        throw new IllegalArgumentException("SNAT source and target must be single addresses: " + source + " -> " + target);
      }
      if (source.family() != target.family()) {
        throw new IllegalArgumentException("SNAT source and target differ in family: " + source + " -> " + target);
      }
      if (comment.getBytes(StandardCharsets.UTF_8).length > MAX_COMMENT_BYTES) {
        throw new IllegalArgumentException("nft comments are limited to " + MAX_COMMENT_BYTES + " bytes: " + comment);
      }
    }

    public IpFamily family() {
      return source.family();
    }

    // Written out, as in netlink.Rule (the generated record methods are slow under a C1-only JIT).
    @Override
    public boolean equals(Object o) {
      return o == this || o instanceof SnatElement e
          && source.equals(e.source) && target.equals(e.target) && comment.equals(e.comment);
    }

    @Override
    public int hashCode() {
      return (31 * source.hashCode() + target.hashCode()) * 31 + comment.hashCode();
    }

    @Override
    public String toString() {
      return source + " : " + target + " (" + comment + ")";
    }
  }

  /** What an interval-set element covers: the addresses first..last (both hosts, same family). */
  public record IpRange(IpPrefix first, IpPrefix last) {
    public IpRange {
      Objects.requireNonNull(first, "first");
      Objects.requireNonNull(last, "last");
      if (!first.isHost() || !last.isHost() || first.family() != last.family()) {
        throw new IllegalArgumentException("a range is two addresses of one family: " + first + "-" + last);
      }
      if (first.firstAddress().compareTo(last.firstAddress()) > 0) {
        throw new IllegalArgumentException("range ends before it starts: " + first + "-" + last);
      }
    }

    /** The addresses of a prefix. */
    public static IpRange of(IpPrefix prefix) {
      return new IpRange(
          IpRanges.host(prefix.firstAddress(), prefix.family()), IpRanges.host(prefix.lastAddress(), prefix.family()));
    }

    public IpFamily family() {
      return first.family();
    }

    @Override
    public String toString() {
      return first.equals(last) ? first.toString() : first + "-" + last;
    }
  }

  /**
   * What {@link #observe()} found. {@code baseIntact}: the table, both maps, both sets and the chain
   * with its hook, priority, policy and exactly the six rules in order are as specified.
   */
  public record NftState(boolean tablePresent, boolean baseIntact, Set<SnatElement> snat, List<IpRange> inCluster) {
    public NftState {
      snat = Set.copyOf(snat);
      inCluster = List.copyOf(inCluster);
    }
  }

  /**
   * One transaction's worth of element changes.
   *
   * @param replaceInCluster when present, both in-cluster sets are flushed and refilled with these
   *     prefixes (any family mix; overlaps and adjacency are merged) in the same transaction
   */
  public record NftChange(
      Set<SnatElement> addSnat, Set<SnatElement> deleteSnat, Optional<List<IpPrefix>> replaceInCluster) {
    public NftChange {
      addSnat = Set.copyOf(addSnat);
      deleteSnat = Set.copyOf(deleteSnat);
      replaceInCluster = replaceInCluster.map(List::copyOf);
      Set<IpPrefix> keys = new HashSet<>();
      for (SnatElement e : addSnat) {
        if (!keys.add(e.source())) {
          throw new IllegalArgumentException("two SNAT elements to add for source " + e.source());
        }
      }
    }

    public static NftChange none() {
      return new NftChange(Set.of(), Set.of(), Optional.empty());
    }

    public boolean isEmpty() {
      return addSnat.isEmpty() && deleteSnat.isEmpty() && replaceInCluster.isEmpty();
    }
  }

  // ---------------------------------------------------------------- observe

  /** How often {@link #observe()} / {@link #apply} listed the table, reused a listing, or could not read the generation. */
  public record ObserveStats(long listings, long cacheHits, long generationFailures) {}

  /**
   * The owned table: {@code nft -j list table inet egress_service_agent}, unless the nftables
   * generation of the namespace is the one of the last listing (or of the state our own last
   * transaction produced), in which case that listing is returned without asking libnftables. A
   * change by anyone (another process, {@code nft delete element} by hand) moves the generation and
   * so is seen here. When the generation cannot be read, every call lists.
   */
  public synchronized NftState observe() {
    return current().state();
  }

  /** Counters of the listing cache, for tests, benchmarks and metrics. */
  public synchronized ObserveStats observeStats() {
    return cache.stats();
  }

  /**
   * The table as the cache holds it or, when that is not current, read anew: its definitions from a listing without
   * elements, the elements of the SNAT maps and in-cluster sets streamed from the kernel (the mark part's are not
   * read here). At 5,000 services a full listing was 110,000 elements of JSON built in libnftables' native memory
   * (some 250 MiB for a moment, 1-3 s); this reads the same in a 64 KiB buffer.
   */
  private Listing current() {
    return cache.get(() -> Listing.of(EgressListing.parse(client.tableDefinitionsIfPresent(FAMILY, TABLE),
        EgressListing.fromKernel(client))));
  }

  // ---------------------------------------------------------------- coverage

  /**
   * Whether the observed set elements cover exactly the addresses of the desired prefixes. Compares
   * merged ranges, so 10.0.0.0/24 + 10.0.1.0/24 equals 10.0.0.0/23 and overlaps do not matter.
   */
  public static boolean sameCoverage(List<IpRange> observed, List<IpPrefix> desired) {
    return IpRanges.sameCoverage(observed, desired);
  }

  /** Sorted, disjoint and non-adjacent ranges covering exactly the given ranges. */
  public static List<IpRange> merge(Collection<IpRange> ranges) {
    return IpRanges.merge(ranges);
  }

  // ---------------------------------------------------------------- apply

  /**
   * Applies {@code change} in ONE nft transaction (all or nothing). With {@code ensureBase}, first
   * (re)creates whatever of the table, maps, sets and chain is missing or wrong; a chain whose rules
   * differ from the six specified is flushed and refilled in the same transaction, an intact chain
   * is never touched. Then elements are deleted (only those present: deletion is by source address),
   * then added; an element whose key is present with another value or comment is deleted and re-added,
   * one already present exactly is skipped. Nothing is sent when nothing needs doing.
   *
   * <p>CLI equivalent: {@code nft -j -f -} with the generated batch.
   */
  public synchronized void apply(NftChange change, boolean ensureBase) {
    // The listing behind the transaction is the cached one when the generation is unchanged (the
    // usual case right after observe()): nothing is listed twice.
    Observed obs = current().observed();
    JsonNode doc = SnatTransaction.planFrom(obs, change, ensureBase);
    if (doc.path("nftables").isEmpty()) {
      return;
    }
    // A refused transaction commits nothing: the generation does not move, and the cached listing stays right.
    client.run(doc);
    Optional<Observed> expected = SnatTransaction.expectedAfter(obs, change, ensureBase);
    if (expected.isPresent()) {
      cache.committed(Listing.of(expected.get()));
    } else {
      cache.invalidate();
    }
  }

  /** The most SNAT elements one transaction of {@link #applyInBatches} adds: a cold start's 50,000 go in several. */
  public static final int MAX_ELEMENTS_PER_TRANSACTION = 4096;

  /** An element the kernel refused, alone, with why. */
  public record Refusal(SnatElement element, String reason) {}

  /**
   * As {@link #apply}, in transactions of bounded size: first the base, the in-cluster sets and the deletions
   * (when they fail, nothing else is tried and the failure is thrown, as by {@link #apply}), then the additions
   * in chunks of at most {@link #MAX_ELEMENTS_PER_TRANSACTION}. A refused chunk is split in halves until the
   * elements the kernel refuses stand alone: those are returned, every other element is applied.
   *
   * @param committed told after each transaction that succeeded (committing once, or not at all when it had
   *     nothing to do): a cache of another part of the table can follow every commit of ours, where one notice
   *     after many would not tell them from someone else's
   */
  public synchronized List<Refusal> applyInBatches(NftChange change, boolean ensureBase, Runnable committed) {
    if (change.addSnat().size() + change.deleteSnat().size() <= MAX_ELEMENTS_PER_TRANSACTION) {
      apply(change, ensureBase);
      committed.run();
      return List.of();
    }
    apply(new NftChange(Set.of(), change.deleteSnat(), change.replaceInCluster()), ensureBase);
    committed.run();
    List<SnatElement> adds = SnatTransaction.sorted(change.addSnat());
    List<Refusal> refused = new ArrayList<>();
    for (int i = 0; i < adds.size(); i += MAX_ELEMENTS_PER_TRANSACTION) {
      addAlone(adds.subList(i, Math.min(adds.size(), i + MAX_ELEMENTS_PER_TRANSACTION)), refused, committed);
    }
    return refused;
  }

  /** As {@link #applyInBatches(NftChange, boolean, Runnable)}, telling no one of the chunks. */
  public synchronized List<Refusal> applyInBatches(NftChange change, boolean ensureBase) {
    return applyInBatches(change, ensureBase, () -> {});
  }

  /** Adds {@code chunk} in one transaction or, refused, each half on its own (depth: log2 of the chunk). */
  private void addAlone(List<SnatElement> chunk, List<Refusal> refused, Runnable committed) {
    try {
      apply(new NftChange(Set.copyOf(chunk), Set.of(), Optional.empty()), false);
      committed.run();
    } catch (NftException.PermissionDenied e) {
      throw e;
    } catch (NftException e) {
      if (chunk.size() == 1) {
        refused.add(new Refusal(chunk.get(0), e.getMessage()));
        return;
      }
      int mid = chunk.size() / 2;
      addAlone(chunk.subList(0, mid), refused, committed);
      addAlone(chunk.subList(mid, chunk.size()), refused, committed);
    }
  }

  /**
   * The fast path: applies {@code change} (SNAT elements only, an intact base) in one transaction planned
   * from {@code present}, what the caller knows the table holds for the sources involved, without listing
   * the table. The cached listing, when current, is kept with the change folded in on its next read.
   *
   * @throws NftException when the kernel refuses the transaction (nothing applied; the cache is forgotten)
   */
  public synchronized void applyKnown(NftChange change, Collection<SnatElement> present) {
    if (change.replaceInCluster().isPresent()) {
      throw new IllegalArgumentException("the in-cluster sets are replaced through apply(), after a listing");
    }
    Map<String, ObjectStatus> objects = new HashMap<>();
    for (IpFamily f : IpFamily.values()) {
      objects.put(EgressTableLayout.snatMap(f), ObjectStatus.OK);
      objects.put(EgressTableLayout.inClusterSet(f), ObjectStatus.OK);
    }
    Map<IpPrefix, SnatElement> known = new HashMap<>();
    present.forEach(e -> known.put(e.source(), e));
    JsonNode doc = SnatTransaction.planFrom(new Observed(true, objects, ObjectStatus.OK, known, List.of()), change, false);
    if (doc.path("nftables").isEmpty()) {
      return;
    }
    try {
      client.run(doc);
    } catch (RuntimeException e) {
      cache.invalidate();
      throw e;
    }
    cache.committed(new SnatTransaction.SnatPatch(change));
  }

  /**
   * A transaction of ours on the mark part of the table (MarkNftables) has just committed: the SNAT
   * objects are as they were, so the next {@link #observe} keeps the cached listing.
   */
  public synchronized void marksCommitted() {
    cache.committedElsewhere();
  }

  /**
   * Whether the cached listing is the table at nftables generation {@code generation}: every commit up to it was one
   * of ours, followed by the cache. A commit by anyone else (a hand edit during a reconcile) makes this false.
   */
  public synchronized boolean listedAt(long generation) {
    return cache.holdsGeneration(generation);
  }

  /**
   * A transaction of ours on another table (NoHostNftables) has just run, committing once or not at all:
   * the SNAT objects are as they were, so the generation it moved is no reason to list this table again.
   */
  public synchronized void otherTableCommitted() {
    cache.committedElsewhere();
  }

  /**
   * The transaction {@link #apply} would run now (after one listing, or none if the cached one is
   * current), as a libnftables-json document; {@code {"nftables":[]}} when nothing needs doing. For
   * tests and {@code --dry-run}.
   */
  public synchronized JsonNode plan(NftChange change, boolean ensureBase) {
    return SnatTransaction.planFrom(current().observed(), change, ensureBase);
  }

  // ---------------------------------------------------------------- cleanup

  /** Removes the whole owned table and nothing else ({@code nft delete table inet egress_service_agent}); absent is fine. */
  public synchronized void deleteTable() {
    ObjectNode doc = F.objectNode();
    doc.putArray("nftables").add(EgressTableLayout.command("delete", "table", F.objectNode().put("family", FAMILY).put("name", TABLE)));
    try {
      client.run(doc);
    } catch (NftException e) {
      if (!e.isNotFound()) {
        throw e;
      }
    } finally {
      cache.invalidate();
    }
  }

  @Override
  public void close() {
    try {
      client.close();
    } finally {
      cache.close();
    }
  }
}

package io.egressservice.nft;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NetnsThread;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The one nftables table the agent owns (DESIGN.md section 2), and nothing else:
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

  private final NftClient client;
  private final ListingCache<Listing> cache;

  private EgressNftables(NftClient client, GenerationSource generation) {
    this.client = client;
    this.cache = new ListingCache<>(generation, MAX_LISTING_AGE_NANOS, System::nanoTime);
  }

  /**
   * Opens a libnftables context on {@code thread}; the table is neither read nor written yet. The
   * nftables generation is read over NETLINK_NETFILTER ({@link GenerationSource#kernel}) so that
   * unchanged tables are not listed again.
   */
  public static EgressNftables open(NetnsThread thread) {
    return open(thread, GenerationSource.kernel(thread));
  }

  /**
   * As {@link #open(NetnsThread)} with the generation read from {@code generation} (closed with this
   * object); a source that fails makes every {@link #observe()} and {@link #apply} list the table.
   */
  public static EgressNftables open(NetnsThread thread, GenerationSource generation) {
    NftClient client;
    try {
      client = NftClient.open(thread);
    } catch (RuntimeException | Error e) {
      generation.close();
      throw e;
    }
    return new EgressNftables(client, generation);
  }

  /** {@code snat_v4} / {@code snat_v6}. */
  public static String snatMap(IpFamily family) {
    return family == IpFamily.V4 ? "snat_v4" : "snat_v6";
  }

  /** {@code in_cluster_v4} / {@code in_cluster_v6}. */
  public static String inClusterSet(IpFamily family) {
    return family == IpFamily.V4 ? "in_cluster_v4" : "in_cluster_v6";
  }

  private static String nftType(IpFamily family) {
    return family == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
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
          host(prefix.firstAddress(), prefix.family()), host(prefix.lastAddress(), prefix.family()));
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

  /** Everything parsed from one listing, including what is wrong with the base objects. */
  private record Observed(
      boolean tablePresent,
      Map<String, ObjectStatus> objects, // maps and sets by name
      ObjectStatus chain,
      Map<IpPrefix, SnatElement> snat,
      List<IpRange> inCluster) {
    boolean baseIntact() {
      return tablePresent
          && chain == ObjectStatus.OK
          && objects.values().stream().allMatch(s -> s == ObjectStatus.OK);
    }

    NftState state() {
      return new NftState(tablePresent, baseIntact(), new HashSet<>(snat.values()), inCluster);
    }
  }

  /** A base object: missing, as specified, or present but different (for the chain: other hook/type/priority). */
  private enum ObjectStatus {
    ABSENT,
    OK,
    WRONG,
    /** Chain only: chain as specified, but its rules are not exactly the six. */
    RULES_DIFFER
  }

  /** A parsed listing and its {@link NftState} (built once: 10,000 elements are not free to copy). */
  private record Listing(Observed observed, NftState state) {
    static Listing of(Observed o) {
      return new Listing(o, o.state());
    }
  }

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

  /** Forgets the cached listing: the next {@link #observe()} lists the table. */
  public synchronized void invalidateCache() {
    cache.invalidate();
  }

  private Listing current() {
    return cache.get(() -> Listing.of(observeRaw()));
  }

  private Observed observeRaw() {
    Optional<JsonNode> listing = client.listTableIfPresent(FAMILY, TABLE);
    Map<String, ObjectStatus> objects = new HashMap<>();
    for (IpFamily f : IpFamily.values()) {
      objects.put(snatMap(f), ObjectStatus.ABSENT);
      objects.put(inClusterSet(f), ObjectStatus.ABSENT);
    }
    if (listing.isEmpty()) {
      return new Observed(false, objects, ObjectStatus.ABSENT, Map.of(), List.of());
    }
    Map<IpPrefix, SnatElement> snat = new HashMap<>();
    List<IpRange> inCluster = new ArrayList<>();
    ObjectStatus chain = ObjectStatus.ABSENT;
    List<JsonNode> rules = new ArrayList<>();
    for (JsonNode item : listing.get().path("nftables")) {
      if (item.has("map")) {
        JsonNode m = item.get("map");
        String name = m.path("name").asText();
        for (IpFamily f : IpFamily.values()) {
          if (name.equals(snatMap(f))) {
            boolean ok = m.path("type").asText().equals(nftType(f))
                && m.path("map").asText().equals(nftType(f))
                && m.path("flags").isMissingNode();
            objects.put(name, ok ? ObjectStatus.OK : ObjectStatus.WRONG);
            if (ok) {
              for (JsonNode e : m.path("elem")) {
                SnatElement el = parseSnatElement(e, f);
                snat.put(el.source(), el);
              }
            }
          }
        }
        // A set of ours that someone re-created as a map is wrong too.
        objects.computeIfPresent(name, (k, v) -> name.startsWith("in_cluster") ? ObjectStatus.WRONG : v);
      } else if (item.has("set")) {
        JsonNode s = item.get("set");
        String name = s.path("name").asText();
        for (IpFamily f : IpFamily.values()) {
          if (name.equals(inClusterSet(f))) {
            JsonNode flags = s.path("flags");
            boolean ok = s.path("type").asText().equals(nftType(f))
                && flags.isArray()
                && flags.size() == 1
                && flags.get(0).asText().equals("interval");
            objects.put(name, ok ? ObjectStatus.OK : ObjectStatus.WRONG);
            if (ok) {
              for (JsonNode e : s.path("elem")) {
                inCluster.add(parseIntervalElement(e, f));
              }
            }
          }
        }
        objects.computeIfPresent(name, (k, v) -> name.startsWith("snat") ? ObjectStatus.WRONG : v);
      } else if (item.has("chain")) {
        JsonNode c = item.get("chain");
        if (c.path("name").asText().equals(CHAIN)) {
          boolean ok = c.path("type").asText().equals("nat")
              && c.path("hook").asText().equals("postrouting")
              && c.path("prio").isInt()
              && c.path("prio").asInt() == CHAIN_PRIORITY
              && c.path("policy").asText().equals("accept")
              && !c.has("dev");
          chain = ok ? ObjectStatus.OK : ObjectStatus.WRONG;
        }
      } else if (item.has("rule")) {
        JsonNode r = item.get("rule");
        if (r.path("chain").asText().equals(CHAIN)) {
          rules.add(r.path("expr"));
        }
      }
    }
    if (chain == ObjectStatus.OK && !rules.equals(expectedRuleExpressions())) {
      chain = ObjectStatus.RULES_DIFFER;
    }
    inCluster.sort(RANGE_ORDER);
    return new Observed(true, objects, chain, snat, inCluster);
  }

  private static SnatElement parseSnatElement(JsonNode e, IpFamily family) {
    // [key, value] where key is "addr" or {"elem":{"val":"addr","comment":"..."}}
    if (!e.isArray() || e.size() != 2) {
      throw new NftException("unexpected map element in " + snatMap(family) + ": " + e);
    }
    JsonNode key = e.get(0);
    String comment = "";
    if (key.has("elem")) {
      comment = key.get("elem").path("comment").asText("");
      key = key.get("elem").path("val");
    }
    return new SnatElement(parseHost(key, family), parseHost(e.get(1), family), comment);
  }

  private static IpRange parseIntervalElement(JsonNode e, IpFamily family) {
    if (e.has("elem")) {
      e = e.get("elem").path("val");
    }
    if (e.isTextual()) {
      IpPrefix p = parseHost(e, family);
      return new IpRange(p, p);
    }
    if (e.has("prefix")) {
      JsonNode p = e.get("prefix");
      return IpRange.of(IpPrefix.parse(p.path("addr").asText() + "/" + p.path("len").asInt()));
    }
    if (e.has("range") && e.get("range").size() == 2) {
      return new IpRange(parseHost(e.get("range").get(0), family), parseHost(e.get("range").get(1), family));
    }
    throw new NftException("unexpected interval element in " + inClusterSet(family) + ": " + e);
  }

  private static IpPrefix parseHost(JsonNode text, IpFamily family) {
    IpPrefix p = IpPrefix.parse(text.asText());
    if (!p.isHost() || p.family() != family) {
      throw new NftException("expected an " + family + " address in nft output, got " + text);
    }
    return p;
  }

  // ---------------------------------------------------------------- coverage

  private static final Comparator<IpRange> RANGE_ORDER =
      Comparator.comparing(IpRange::family).thenComparing(r -> r.first().firstAddress());

  /**
   * Whether the observed set elements cover exactly the addresses of the desired prefixes. Compares
   * merged ranges, so 10.0.0.0/24 + 10.0.1.0/24 equals 10.0.0.0/23 and overlaps do not matter.
   */
  public static boolean sameCoverage(List<IpRange> observed, List<IpPrefix> desired) {
    return merge(observed).equals(merge(desired.stream().map(IpRange::of).toList()));
  }

  /** Sorted, disjoint and non-adjacent ranges covering exactly the given ranges. */
  public static List<IpRange> merge(Collection<IpRange> ranges) {
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
    JsonNode doc = planFrom(obs, change, ensureBase);
    if (doc.path("nftables").isEmpty()) {
      return;
    }
    // A refused transaction commits nothing: the generation does not move, and the cached listing stays right.
    client.run(doc);
    Optional<Observed> expected = expectedAfter(obs, change, ensureBase);
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
   */
  public synchronized List<Refusal> applyInBatches(NftChange change, boolean ensureBase) {
    if (change.addSnat().size() + change.deleteSnat().size() <= MAX_ELEMENTS_PER_TRANSACTION) {
      apply(change, ensureBase);
      return List.of();
    }
    apply(new NftChange(Set.of(), change.deleteSnat(), change.replaceInCluster()), ensureBase);
    List<SnatElement> adds = sorted(change.addSnat());
    List<Refusal> refused = new ArrayList<>();
    for (int i = 0; i < adds.size(); i += MAX_ELEMENTS_PER_TRANSACTION) {
      addAlone(adds.subList(i, Math.min(adds.size(), i + MAX_ELEMENTS_PER_TRANSACTION)), refused);
    }
    return refused;
  }

  /** Adds {@code chunk} in one transaction or, refused, each half on its own (depth: log2 of the chunk). */
  private void addAlone(List<SnatElement> chunk, List<Refusal> refused) {
    try {
      apply(new NftChange(Set.copyOf(chunk), Set.of(), Optional.empty()), false);
    } catch (NftException.PermissionDenied e) {
      throw e;
    } catch (NftException e) {
      if (chunk.size() == 1) {
        refused.add(new Refusal(chunk.get(0), e.getMessage()));
        return;
      }
      int mid = chunk.size() / 2;
      addAlone(chunk.subList(0, mid), refused);
      addAlone(chunk.subList(mid, chunk.size()), refused);
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
      objects.put(snatMap(f), ObjectStatus.OK);
      objects.put(inClusterSet(f), ObjectStatus.OK);
    }
    Map<IpPrefix, SnatElement> known = new HashMap<>();
    present.forEach(e -> known.put(e.source(), e));
    JsonNode doc = planFrom(new Observed(true, objects, ObjectStatus.OK, known, List.of()), change, false);
    if (doc.path("nftables").isEmpty()) {
      return;
    }
    try {
      client.run(doc);
    } catch (RuntimeException e) {
      cache.invalidate();
      throw e;
    }
    cache.committed(new SnatPatch(change));
  }

  /** Element changes of the fast path, replayed on the cached listing when it is next read. */
  private static final class SnatPatch implements ListingCache.Patch<Listing> {
    private final Map<IpPrefix, Optional<SnatElement>> bySource = new HashMap<>();

    SnatPatch(NftChange change) {
      change.deleteSnat().forEach(e -> bySource.put(e.source(), Optional.empty()));
      change.addSnat().forEach(e -> bySource.put(e.source(), Optional.of(e)));
    }

    @Override
    public Optional<Listing> applyTo(Listing listing) {
      Observed o = listing.observed();
      if (!o.baseIntact()) {
        return Optional.empty();
      }
      Map<IpPrefix, SnatElement> snat = new HashMap<>(o.snat());
      bySource.forEach((source, e) -> {
        if (e.isPresent()) {
          snat.put(source, e.get());
        } else {
          snat.remove(source);
        }
      });
      return Optional.of(Listing.of(new Observed(true, o.objects(), o.chain(), snat, o.inCluster())));
    }

    @Override
    public ListingCache.Patch<Listing> then(ListingCache.Patch<Listing> later) {
      bySource.putAll(((SnatPatch) later).bySource);
      return this;
    }
  }

  /**
   * A transaction of ours on the mark part of the table (MarkNftables) has just committed: the SNAT
   * objects are as they were, so the next {@link #observe} keeps the cached listing.
   */
  public synchronized void marksCommitted() {
    cache.committedElsewhere();
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
    return planFrom(current().observed(), change, ensureBase);
  }

  /**
   * What a listing would show after {@link #planFrom}'s transaction committed on top of {@code obs};
   * empty where that is not modelled (a broken base left as it is).
   */
  private static Optional<Observed> expectedAfter(Observed obs, NftChange change, boolean ensureBase) {
    if (!ensureBase && !obs.baseIntact()) {
      return Optional.empty();
    }
    Set<String> recreated = new HashSet<>();
    Map<String, ObjectStatus> objects = new HashMap<>();
    for (Map.Entry<String, ObjectStatus> e : obs.objects().entrySet()) {
      if (e.getValue() != ObjectStatus.OK) {
        recreated.add(e.getKey());
      }
      objects.put(e.getKey(), ObjectStatus.OK);
    }
    Map<IpPrefix, SnatElement> snat = new HashMap<>();
    for (Map.Entry<IpPrefix, SnatElement> e : obs.snat().entrySet()) {
      if (!recreated.contains(snatMap(e.getValue().family()))) {
        snat.put(e.getKey(), e.getValue());
      }
    }
    for (SnatElement e : change.deleteSnat()) {
      snat.remove(e.source());
    }
    for (SnatElement e : change.addSnat()) {
      snat.put(e.source(), e);
    }
    List<IpRange> inCluster;
    if (change.replaceInCluster().isPresent()) {
      inCluster = merge(change.replaceInCluster().get().stream().map(IpRange::of).toList());
    } else {
      inCluster = new ArrayList<>();
      for (IpRange r : obs.inCluster()) {
        if (!recreated.contains(inClusterSet(r.family()))) {
          inCluster.add(r);
        }
      }
    }
    return Optional.of(new Observed(true, objects, ObjectStatus.OK, snat, inCluster));
  }

  private static JsonNode planFrom(Observed obs, NftChange change, boolean ensureBase) {
    ArrayNode cmds = F.arrayNode();
    Set<String> recreated = new HashSet<>();
    if (ensureBase) {
      ensureBase(obs, cmds, recreated);
    }
    Map<IpPrefix, SnatElement> present = new HashMap<>();
    for (Map.Entry<IpPrefix, SnatElement> e : obs.snat().entrySet()) {
      if (!recreated.contains(snatMap(e.getValue().family()))) {
        present.put(e.getKey(), e.getValue());
      }
    }

    if (change.replaceInCluster().isPresent()) {
      List<IpRange> merged = merge(change.replaceInCluster().get().stream().map(IpRange::of).toList());
      for (IpFamily f : IpFamily.values()) {
        if (obs.tablePresent() && obs.objects().get(inClusterSet(f)) != ObjectStatus.ABSENT
            && !recreated.contains(inClusterSet(f))) {
          cmds.add(command("flush", "set", setRef(inClusterSet(f))));
        }
        ArrayNode elems = F.arrayNode();
        for (IpRange r : merged) {
          if (r.family() == f) {
            elems.add(intervalElement(r));
          }
        }
        if (!elems.isEmpty()) {
          cmds.add(command("add", "element", setRef(inClusterSet(f)).set("elem", elems)));
        }
      }
    }

    // Deletions: requested ones that are present, plus keys that an add changes.
    Map<IpFamily, Set<IpPrefix>> deleteKeys = new EnumMap<>(IpFamily.class);
    Map<IpFamily, List<SnatElement>> adds = new EnumMap<>(IpFamily.class);
    for (SnatElement e : change.deleteSnat()) {
      if (present.containsKey(e.source())) {
        deleteKeys.computeIfAbsent(e.family(), k -> new LinkedHashSet<>()).add(e.source());
      }
    }
    for (SnatElement e : sorted(change.addSnat())) {
      SnatElement old = present.get(e.source());
      Set<IpPrefix> deleting = deleteKeys.getOrDefault(e.family(), Set.of());
      if (old != null && old.equals(e) && !deleting.contains(e.source())) {
        continue; // already there exactly
      }
      if (old != null) {
        deleteKeys.computeIfAbsent(e.family(), k -> new LinkedHashSet<>()).add(e.source());
      }
      adds.computeIfAbsent(e.family(), k -> new ArrayList<>()).add(e);
    }
    for (IpFamily f : IpFamily.values()) {
      Set<IpPrefix> keys = deleteKeys.getOrDefault(f, Set.of());
      if (!keys.isEmpty()) {
        ArrayNode elems = F.arrayNode();
        keys.stream().sorted().forEach(k -> elems.add(k.addressText()));
        cmds.add(command("delete", "element", setRef(snatMap(f)).set("elem", elems)));
      }
    }
    for (IpFamily f : IpFamily.values()) {
      List<SnatElement> list = adds.getOrDefault(f, List.of());
      if (!list.isEmpty()) {
        ArrayNode elems = F.arrayNode();
        list.forEach(e -> elems.add(mapElement(e)));
        cmds.add(command("add", "element", setRef(snatMap(f)).set("elem", elems)));
      }
    }
    ObjectNode doc = F.objectNode();
    doc.set("nftables", cmds);
    return doc;
  }

  private static void ensureBase(Observed obs, ArrayNode cmds, Set<String> recreated) {
    if (!obs.tablePresent()) {
      cmds.add(command("add", "table", F.objectNode().put("family", FAMILY).put("name", TABLE)));
    }
    boolean anyWrongObject = obs.objects().values().stream().anyMatch(s -> s == ObjectStatus.WRONG);
    boolean chainPresent = obs.chain() != ObjectStatus.ABSENT;
    boolean refillRules = obs.chain() != ObjectStatus.OK || anyWrongObject;
    // Rules reference the maps and sets: they go first so that wrong ones can be deleted.
    if (chainPresent && refillRules) {
      cmds.add(command("flush", "chain", chainRef()));
    }
    if (obs.chain() == ObjectStatus.WRONG) {
      cmds.add(command("delete", "chain", chainRef()));
    }
    for (IpFamily f : IpFamily.values()) {
      for (String name : List.of(snatMap(f), inClusterSet(f))) {
        ObjectStatus s = obs.objects().get(name);
        if (s == ObjectStatus.WRONG) {
          // delete by name works for sets and maps alike ("delete set").
          cmds.add(command("delete", "set", setRef(name)));
        }
        if (s != ObjectStatus.OK) {
          recreated.add(name);
          cmds.add(name.startsWith("snat") ? mapSpec(f) : setSpec(f));
        }
      }
    }
    if (obs.chain() == ObjectStatus.ABSENT || obs.chain() == ObjectStatus.WRONG) {
      cmds.add(command("add", "chain", chainRef()
          .put("type", "nat")
          .put("hook", "postrouting")
          .put("prio", CHAIN_PRIORITY)
          .put("policy", "accept")));
    }
    if (refillRules) {
      for (JsonNode expr : expectedRuleExpressions()) {
        ObjectNode rule = chainRef();
        rule.remove("name");
        rule.put("chain", CHAIN);
        rule.set("expr", expr.deepCopy());
        cmds.add(command("add", "rule", rule));
      }
    }
  }

  private static ObjectNode mapSpec(IpFamily f) {
    return command("add", "map", setRef(snatMap(f)).put("type", nftType(f)).put("map", nftType(f)));
  }

  private static ObjectNode setSpec(IpFamily f) {
    ObjectNode set = setRef(inClusterSet(f)).put("type", nftType(f));
    set.putArray("flags").add("interval");
    return command("add", "set", set);
  }

  /**
   * The six rules as libnftables-json expressions, in order; also what nft 1.0.6 prints for them,
   * so observed rules are compared to exactly this.
   */
  static List<JsonNode> expectedRuleExpressions() {
    List<JsonNode> rules = new ArrayList<>();
    // Steered packets (out of the steering device) keep their pod source: an identity SNAT sets the
    // connection's NAT binding here, so no later NAT chain (the CNI's masquerade at srcnat) runs for it.
    for (IpFamily f : IpFamily.values()) {
      ArrayNode expr = F.arrayNode();
      ObjectNode match = expr.addObject().putObject("match");
      match.put("op", "==");
      match.putObject("left").putObject("meta").put("key", "oifname");
      match.put("right", STEERING_DEVICE);
      ObjectNode snat = expr.addObject().putObject("snat");
      snat.put("family", f.nftName());
      snat.putObject("addr").putObject("payload").put("protocol", f.nftName()).put("field", "saddr");
      rules.add(expr);
    }
    for (IpFamily f : IpFamily.values()) {
      ArrayNode expr = F.arrayNode();
      ObjectNode match = expr.addObject().putObject("match");
      match.put("op", "==");
      match.putObject("left").putObject("payload").put("protocol", f.nftName()).put("field", "daddr");
      match.put("right", "@" + inClusterSet(f));
      expr.addObject().putNull("return");
      rules.add(expr);
    }
    for (IpFamily f : IpFamily.values()) {
      ArrayNode expr = F.arrayNode();
      ObjectNode snat = expr.addObject().putObject("snat");
      snat.put("family", f.nftName());
      ObjectNode map = snat.putObject("addr").putObject("map");
      map.putObject("key").putObject("payload").put("protocol", f.nftName()).put("field", "saddr");
      map.put("data", "@" + snatMap(f));
      rules.add(expr);
    }
    return rules;
  }

  private static JsonNode mapElement(SnatElement e) {
    ArrayNode pair = F.arrayNode();
    if (e.comment().isEmpty()) {
      pair.add(e.source().addressText());
    } else {
      pair.addObject().putObject("elem").put("val", e.source().addressText()).put("comment", e.comment());
    }
    pair.add(e.target().addressText());
    return pair;
  }

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

  private static List<SnatElement> sorted(Set<SnatElement> elements) {
    return elements.stream().sorted(Comparator.comparing(SnatElement::source)).toList();
  }

  private static ObjectNode command(String verb, String object, ObjectNode body) {
    ObjectNode cmd = F.objectNode();
    cmd.putObject(verb).set(object, body);
    return cmd;
  }

  private static ObjectNode setRef(String name) {
    return F.objectNode().put("family", FAMILY).put("table", TABLE).put("name", name);
  }

  private static ObjectNode chainRef() {
    return F.objectNode().put("family", FAMILY).put("table", TABLE).put("name", CHAIN);
  }

  static IpPrefix host(BigInteger address, IpFamily family) {
    byte[] raw = address.toByteArray();
    byte[] bytes = new byte[family.byteLength()];
    int n = Math.min(raw.length, bytes.length);
    System.arraycopy(raw, raw.length - n, bytes, bytes.length - n, n);
    return IpPrefix.host(bytes);
  }

  // ---------------------------------------------------------------- cleanup

  /** Removes the whole owned table and nothing else ({@code nft delete table inet egress_service_agent}); absent is fine. */
  public synchronized void deleteTable() {
    ObjectNode doc = F.objectNode();
    doc.putArray("nftables").add(command("delete", "table", F.objectNode().put("family", FAMILY).put("name", TABLE)));
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

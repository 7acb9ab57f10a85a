package io.egressservice.nft;

import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.NftException;
import io.egressservice.kernel.Kernel;
import io.egressservice.kernel.Nftables;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.function.BiConsumer;

/**
 * Mark mode's objects in the owned table {@code inet egress_service_agent} (next to the SNAT objects
 * that {@link EgressNftables} keeps):
 *
 * <pre>
 *   chain mark_t100 { meta mark set meta mark &amp; ~MASK | MARK }      # one per network (table 100)
 *   map mark_v4 { type ipv4_addr : verdict; }   # source -> jump mark_t100, comment "ns/name"
 *   map mark_v6 { type ipv6_addr : verdict; }
 *   chain mark_prerouting { type filter hook prerouting priority mangle; ip saddr vmap @mark_v4; ip6 saddr vmap @mark_v6 }
 *   chain mark_output { type route hook output priority mangle; (the same two rules) }
 *   set mark_reply_ifaces { type ifname; }      # uplinks with strict rp_filter (see dataplane.ReversePath)
 *   chain mark_reply { type filter hook prerouting priority dstnat + 10;
 *                      iifname @mark_reply_ifaces ip daddr vmap @mark_v4 }
 * </pre>
 *
 * <p>{@code mark_reply} runs after NAT has been undone (replies) or done (inbound DNAT), so the
 * destination is the endpoint; it exists only while some uplink of a marked network filters strictly.
 *
 * One map lookup per packet whatever the number of sources; only the mask's bits of the packet mark
 * change, so marks set by others (OVN-Kubernetes' 0x3f0, kube-proxy's 0x4000) survive. nft 1.0.6
 * cannot OR a map's value into the mark, hence the verdict map and one small chain per network.
 *
 * <p>This class is the objects' API and listing cache; reading a listing is {@link MarkListing}, the commands
 * from listed to planned {@link MarkCommands}.
 */
public final class MarkNftables implements AutoCloseable {
  public static final String PREROUTING = "mark_prerouting";
  public static final String OUTPUT = "mark_output";
  public static final String REPLY = "mark_reply";
  public static final String REPLY_IFACES = "mark_reply_ifaces";
  /** After dstnat (-100): the destination is the endpoint's own address. */
  static final int REPLY_PRIORITY = -90;
  static final int MANGLE_PRIORITY = -150;
  private static final String TABLE = EgressNftables.TABLE;
  private static final String FAMILY = EgressNftables.FAMILY;
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private final Nftables client;
  /** Skips the listing while the ruleset generation is unchanged, like {@link EgressNftables}. */
  private final ListingCache<MarkState> cache;

  private MarkNftables(Nftables client, GenerationSource generation) {
    this.client = client;
    this.cache = new ListingCache<>(generation, EgressNftables.MAX_LISTING_AGE_NANOS, System::nanoTime);
  }

  /** The mark part of the table of {@code kernel}, with a libnftables context and generation source of its own. */
  public static MarkNftables open(Kernel kernel) {
    return ListingCache.openWithGeneration(kernel, MarkNftables::new);
  }

  /** The same through {@code client}, the generation read from {@code generation} (both closed with this object). */
  public static MarkNftables open(Nftables client, GenerationSource generation) {
    return new MarkNftables(client, generation);
  }

  /** A source whose packets jump to its network's chain. */
  public record MarkElement(IpPrefix source, long table, String comment) {
    public IpFamily family() {
      return source.family();
    }
  }

  /**
   * The mark objects present.
   *
   * @param networkChains table id to the mark its chain sets (as read back), for chains named {@code mark_t<id>}
   * @param intactNetworkChains those whose single rule is exactly {@code meta mark set meta mark & ~mask | mark} for {@code mask}
   */
  public record MarkState(
      boolean tablePresent,
      Set<String> maps,
      Map<String, Boolean> hookChains,
      Map<Long, Long> networkChains,
      Map<Long, Long> networkChainMasks,
      Map<IpPrefix, MarkElement> elements,
      Optional<Set<String>> replyIfaces) {
    public MarkState {
      replyIfaces = replyIfaces.map(Set::copyOf);
    }

    /** Without the reply objects. */
    public MarkState(boolean tablePresent, Set<String> maps, Map<String, Boolean> hookChains,
        Map<Long, Long> networkChains, Map<Long, Long> networkChainMasks, Map<IpPrefix, MarkElement> elements) {
      this(tablePresent, maps, hookChains, networkChains, networkChainMasks, elements, Optional.empty());
    }

    public boolean anyPresent() {
      return !maps.isEmpty() || !hookChains.isEmpty() || !networkChains.isEmpty() || replyIfaces.isPresent();
    }
  }

  /**
   * What mark mode wants: the mask, each network's mark, and the sources. Empty networks = no mark objects.
   *
   * @param replyIfaces uplinks whose packets to a marked endpoint get its mark (strict rp_filter); empty: none
   */
  public record MarkPlan(long mask, Map<Long, Long> networkMarks, Set<MarkElement> elements, Set<String> replyIfaces) {
    public MarkPlan {
      replyIfaces = Set.copyOf(replyIfaces);
    }

    public MarkPlan(long mask, Map<Long, Long> networkMarks, Set<MarkElement> elements) {
      this(mask, networkMarks, elements, Set.of());
    }

    public static MarkPlan none() {
      return new MarkPlan(0, Map.of(), Set.of());
    }

    public boolean wanted() {
      return !networkMarks.isEmpty();
    }
  }

  public static String chainOf(long table) {
    return "mark_t" + table;
  }

  static String mapOf(IpFamily f) {
    return f == IpFamily.V4 ? "mark_v4" : "mark_v6";
  }

  /**
   * The mark objects as the cache holds them or, when that is not current, read anew: the table's definitions from a
   * listing without elements, the mark maps' and reply set's elements streamed from the kernel.
   */
  public synchronized MarkState observe() {
    return cache.get(() -> MarkListing.parse(client.tableDefinitionsIfPresent(FAMILY, TABLE),
        MarkListing.fromKernel(client)));
  }

  /** Counters of the listing cache, for tests and benchmarks. */
  public synchronized EgressNftables.ObserveStats observeStats() {
    return cache.stats();
  }


  /**
   * What a mark transaction was planned from and what the mark objects are once all of it has committed: with it the
   * listing cache keeps the result of a full reconcile instead of listing the table again (at 5,000 services one
   * listing is 110,000 elements of JSON, seconds of CPU and some 250 MiB of native memory in libnftables).
   */
  public record MarkOutcome(MarkState basedOn, MarkState expected) {}

  /** The outcome of {@link #commands}{@code (observed, desired)}, for {@link #runInBatches(ArrayNode, Optional, Runnable)}. */
  public static MarkOutcome outcome(MarkState observed, MarkPlan desired) {
    return new MarkOutcome(observed, MarkCommands.expectedAfter(observed, desired));
  }

  /**
   * The commands that take {@code observed} to {@code desired}, in a valid order (chains before the
   * elements that jump to them; elements gone before their chains are deleted); an empty array when
   * nothing differs.
   */
  public static ArrayNode commands(MarkState observed, MarkPlan desired) {
    return MarkCommands.commands(observed, desired);
  }


  /**
   * A transaction of ours on the SNAT part of the table (EgressNftables, no base repair) has just
   * committed: the mark objects are as they were, so the next {@link #observe} need not list the whole
   * table again (with every SNAT element in it) only because the generation moved.
   */
  public synchronized void snatCommitted() {
    cache.committedElsewhere(TABLE_PRESENT);
  }

  /** A transaction on the SNAT part committed: whatever else it did, the table exists (it never deletes it). */
  private static final ListingCache.Patch<MarkState> TABLE_PRESENT = new ListingCache.Patch<>() {
    @Override
    public Optional<MarkState> applyTo(MarkState s) {
      return Optional.of(s.tablePresent() ? s : new MarkState(true, s.maps(), s.hookChains(), s.networkChains(),
          s.networkChainMasks(), s.elements(), s.replyIfaces()));
    }

    @Override
    public ListingCache.Patch<MarkState> then(ListingCache.Patch<MarkState> later) {
      return later == this ? this : ListingCache.Patch.sequence(this, later);
    }
  };

  /**
   * Whether the cached listing is the table at nftables generation {@code generation}: every commit up to it was one
   * of ours, followed by the cache. A commit by anyone else (a hand edit during a reconcile) makes this false.
   */
  public synchronized boolean listedAt(long generation) {
    return cache.holdsGeneration(generation);
  }

  /** As {@link #snatCommitted}, for a transaction of ours on another table (NoHostNftables). */
  public synchronized void otherTableCommitted() {
    cache.committedElsewhere();
  }

  /**
   * The fast path: runs {@code commands}, which change mark elements only (planned from what the caller
   * knows the table holds), as one transaction; the cached listing, when current, is kept with
   * {@code removed} and {@code added} folded in on its next read, instead of being listed again.
   */
  public synchronized void runKnown(ArrayNode commands, Collection<IpPrefix> removed, Collection<MarkElement> added) {
    if (commands.isEmpty()) {
      return;
    }
    try {
      transact(commands);
    } catch (RuntimeException e) {
      cache.invalidate();
      throw e;
    }
    cache.committed(new ElementPatch(removed, added));
  }

  /** Mark element changes, replayed on the cached listing when it is next read. */
  private static final class ElementPatch implements ListingCache.Patch<MarkState> {
    private final Map<IpPrefix, Optional<MarkElement>> bySource = new HashMap<>();

    ElementPatch(Collection<IpPrefix> removed, Collection<MarkElement> added) {
      removed.forEach(s -> bySource.put(s, Optional.empty()));
      added.forEach(e -> bySource.put(e.source(), Optional.of(e)));
    }

    @Override
    public Optional<MarkState> applyTo(MarkState s) {
      Map<IpPrefix, MarkElement> elements = new HashMap<>(s.elements());
      bySource.forEach((source, e) -> {
        if (e.isPresent()) {
          elements.put(source, e.get());
        } else {
          elements.remove(source);
        }
      });
      return Optional.of(new MarkState(s.tablePresent(), s.maps(), s.hookChains(), s.networkChains(),
          s.networkChainMasks(), elements, s.replyIfaces()));
    }

    @Override
    public ListingCache.Patch<MarkState> then(ListingCache.Patch<MarkState> later) {
      if (!(later instanceof ElementPatch elements)) {
        return ListingCache.Patch.sequence(this, later);
      }
      bySource.putAll(elements.bySource);
      return this;
    }
  }

  /** A mark element the kernel refused, alone, with why. */
  public record Refusal(String source, String reason) {}

  /**
   * Runs {@code commands} in transactions of bounded size: every command but the element additions first (when that
   * fails, the failure is thrown), then the additions in chunks of at most {@link
   * EgressNftables#MAX_ELEMENTS_PER_TRANSACTION}; a refused chunk is split until the refused elements stand alone,
   * which are returned (every other element is applied).
   */
  public synchronized List<Refusal> runInBatches(ArrayNode commands) {
    return runInBatches(commands, Optional.empty(), () -> {});
  }

  /**
   * As {@link #runInBatches(ArrayNode)}, telling {@code committed} after every transaction that committed (so that
   * the SNAT part's cache, told once per commit, can keep its listing). With the {@code outcome} the commands were
   * planned with, and nothing refused, the listing cache keeps {@code outcome.expected()} when no one else committed
   * in between; otherwise the next {@link #observe} lists.
   */
  public synchronized List<Refusal> runInBatches(ArrayNode commands, Optional<MarkOutcome> outcome, Runnable committed) {
    Batches batches = new Batches(committed);
    try {
      batches.run(commands);
    } catch (RuntimeException e) {
      cache.invalidate();
      throw e;
    }
    if (outcome.isPresent() && batches.refused.isEmpty()) {
      cache.committedSeveral(outcome.get().basedOn(), outcome.get().expected(), batches.commits);
    } else {
      cache.invalidate();
    }
    return List.copyOf(batches.refused);
  }

  /** One run in bounded transactions: counts its commits and collects the refused elements. */
  private final class Batches {
    private final Runnable committed;
    private final List<Refusal> refused = new ArrayList<>();
    private int commits;

    Batches(Runnable committed) {
      this.committed = committed;
    }

    void run(ArrayNode commands) {
      int elements = 0;
      for (JsonNode c : commands) {
        elements += c.path("add").path("element").path("elem").size();
      }
      if (elements <= EgressNftables.MAX_ELEMENTS_PER_TRANSACTION) {
        commit(commands);
        return;
      }
      ArrayNode first = F.arrayNode();
      List<JsonNode> additions = new ArrayList<>();
      for (JsonNode c : commands) {
        if (c.path("add").has("element")) {
          additions.add(c);
        } else {
          first.add(c);
        }
      }
      commit(first);
      for (JsonNode c : additions) {
        JsonNode elem = c.path("add").path("element").path("elem");
        List<JsonNode> all = new ArrayList<>();
        elem.forEach(all::add);
        for (int i = 0; i < all.size(); i += EgressNftables.MAX_ELEMENTS_PER_TRANSACTION) {
          addAlone(c.path("add").path("element"),
              all.subList(i, Math.min(all.size(), i + EgressNftables.MAX_ELEMENTS_PER_TRANSACTION)));
        }
      }
    }

    /** One transaction; nothing (and no commit) when empty. */
    private void commit(ArrayNode commands) {
      if (commands.isEmpty()) {
        return;
      }
      transact(commands);
      commits++;
      committed.run();
    }

    private void addAlone(JsonNode ref, List<JsonNode> chunk) {
      ObjectNode body = ((ObjectNode) ref).deepCopy();
      ArrayNode elems = body.putArray("elem");
      chunk.forEach(elems::add);
      try {
        commit(F.arrayNode().add(MarkCommands.cmd("add", "element", body)));
      } catch (NftException.PermissionDenied e) {
        throw e;
      } catch (NftException e) {
        if (chunk.size() == 1) {
          refused.add(new Refusal(chunk.get(0).path(0).path("elem").path("val").asText(chunk.get(0).asText()),
              e.getMessage()));
          return;
        }
        int mid = chunk.size() / 2;
        addAlone(ref, chunk.subList(0, mid));
        addAlone(ref, chunk.subList(mid, chunk.size()));
      }
    }
  }

  /** Runs non-empty {@code commands} as one transaction; the caller keeps the cache right. */
  private void transact(ArrayNode commands) {
    ObjectNode doc = F.objectNode();
    doc.set("nftables", commands);
    client.run(doc);
  }


  @Override
  public void close() {
    try {
      cache.close();
    } finally {
      client.close();
    }
  }
}
package io.egressservice.nft;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NetnsThread;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Collection;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

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

  private final NftClient client;
  /** Skips the listing while the ruleset generation is unchanged, like {@link EgressNftables}. */
  private final ListingCache<MarkState> cache;

  private MarkNftables(NftClient client, GenerationSource generation) {
    this.client = client;
    this.cache = new ListingCache<>(generation, EgressNftables.MAX_LISTING_AGE_NANOS, System::nanoTime);
  }

  public static MarkNftables open(NetnsThread thread, GenerationSource generation) {
    return new MarkNftables(NftClient.open(thread), generation);
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

  public synchronized MarkState observe() {
    return cache.get(() -> parse(client.listTableIfPresent(FAMILY, TABLE)));
  }

  /** Counters of the listing cache, for tests and benchmarks. */
  public synchronized EgressNftables.ObserveStats observeStats() {
    return cache.stats();
  }

  /** Parses a {@code nft -j list table} document (or its absence). */
  static MarkState parse(Optional<JsonNode> listing) {
    Set<String> maps = new HashSet<>();
    Map<String, Boolean> hooks = new HashMap<>();
    Map<Long, Long> chains = new TreeMap<>();
    Map<Long, Long> masks = new TreeMap<>();
    Map<IpPrefix, MarkElement> elements = new HashMap<>();
    Optional<Set<String>> replyIfaces = Optional.empty();
    if (listing.isEmpty()) {
      return new MarkState(false, maps, hooks, chains, masks, elements, replyIfaces);
    }
    Map<String, List<JsonNode>> rulesByChain = new HashMap<>();
    for (JsonNode item : listing.get().path("nftables")) {
      if (item.has("rule")) {
        rulesByChain.computeIfAbsent(item.get("rule").path("chain").asText(), k -> new ArrayList<>())
            .add(item.get("rule").path("expr"));
      }
    }
    for (JsonNode item : listing.get().path("nftables")) {
      JsonNode set = item.path("set");
      if (!set.isMissingNode() && set.path("name").asText().equals(REPLY_IFACES)) {
        Set<String> names = new HashSet<>();
        set.path("elem").forEach(e -> names.add(e.asText()));
        replyIfaces = Optional.of(names);
      }
      JsonNode map = item.path("map");
      if (!map.isMissingNode() && map.path("name").asText().startsWith("mark_v")) {
        maps.add(map.path("name").asText());
        for (JsonNode e : map.path("elem")) {
          JsonNode key = e.get(0);
          String addr = key.isObject() ? key.path("elem").path("val").asText() : key.asText();
          String comment = key.isObject() ? key.path("elem").path("comment").asText("") : "";
          String target = e.get(1).path("jump").path("target").asText("");
          Optional<IpPrefix> source = IpPrefix.tryParse(addr);
          if (source.isPresent() && target.startsWith("mark_t")) {
            try {
              long table = Long.parseLong(target.substring(6));
              elements.put(source.get(), new MarkElement(source.get(), table, comment));
            } catch (NumberFormatException ignored) {
              // not ours: left for the next apply to replace
            }
          }
        }
      }
      JsonNode chain = item.path("chain");
      if (chain.isMissingNode()) {
        continue;
      }
      String name = chain.path("name").asText();
      List<JsonNode> rules = rulesByChain.getOrDefault(name, List.of());
      if (name.equals(PREROUTING) || name.equals(OUTPUT)) {
        boolean hookOk = chain.path("hook").asText().equals(name.equals(PREROUTING) ? "prerouting" : "output")
            && chain.path("type").asText().equals(name.equals(PREROUTING) ? "filter" : "route")
            && chain.path("prio").asInt() == MANGLE_PRIORITY;
        boolean rulesOk = rules.size() == 2 && rules.get(0).equals(vmapRule(IpFamily.V4))
            && rules.get(1).equals(vmapRule(IpFamily.V6));
        hooks.put(name, hookOk && rulesOk);
      } else if (name.equals(REPLY)) {
        boolean hookOk = chain.path("hook").asText().equals("prerouting") && chain.path("type").asText().equals("filter")
            && chain.path("prio").asInt() == REPLY_PRIORITY;
        hooks.put(name, hookOk && rules.size() == 1 && rules.get(0).equals(replyRule()));
      } else if (name.startsWith("mark_t")) {
        try {
          long table = Long.parseLong(name.substring(6));
          long mark = -1;
          long mask = -1;
          if (rules.size() == 1) {
            JsonNode value = rules.get(0).path(0).path("mangle").path("value").path("|");
            mark = value.path(1).asLong(-1);
            mask = ~value.path(0).path("&").path(1).asLong(0) & 0xffffffffL;
          }
          chains.put(table, mark);
          masks.put(table, mask);
        } catch (NumberFormatException ignored) {
          // a chain of ours with a foreign name: not touched
        }
      }
    }
    return new MarkState(true, maps, hooks, chains, masks, elements, replyIfaces);
  }

  /**
   * The commands that take {@code observed} to {@code desired}, in a valid order (chains before the
   * elements that jump to them; elements gone before their chains are deleted); an empty array when
   * nothing differs.
   */
  public static ArrayNode commands(MarkState observed, MarkPlan desired) {
    ArrayNode cmds = F.arrayNode();
    if (!desired.wanted()) {
      if (observed.anyPresent()) {
        for (String hook : List.of(PREROUTING, OUTPUT, REPLY)) {
          if (observed.hookChains().containsKey(hook)) {
            cmds.add(cmd("delete", "chain", chainRef(hook)));
          }
        }
        if (observed.replyIfaces().isPresent()) {
          cmds.add(cmd("delete", "set", setRef(REPLY_IFACES)));
        }
        for (String map : observed.maps()) {
          cmds.add(cmd("delete", "map", setRef(map)));
        }
        for (long table : observed.networkChains().keySet()) {
          cmds.add(cmd("delete", "chain", chainRef(chainOf(table))));
        }
      }
      return cmds;
    }
    if (!observed.tablePresent()) {
      cmds.add(cmd("add", "table", F.objectNode().put("family", FAMILY).put("name", TABLE)));
    }
    // Network chains first: the elements jump to them.
    for (Map.Entry<Long, Long> net : new TreeMap<>(desired.networkMarks()).entrySet()) {
      long table = net.getKey();
      Long have = observed.networkChains().get(table);
      // nft folds the mark's own bits out of the AND it lists (meta mark & 0xc1ffffff | 0x01000000 for mask
      // 0x3f000000): the mask read back lacks them, which is the same rule.
      long readMask = observed.networkChainMasks().getOrDefault(table, -1L);
      boolean intact = have != null && have.equals(net.getValue())
          && (readMask == desired.mask() || (readMask | net.getValue()) == desired.mask());
      if (intact) {
        continue;
      }
      if (have == null) {
        cmds.add(cmd("add", "chain", chainRef(chainOf(table))));
      } else {
        cmds.add(cmd("flush", "chain", chainRef(chainOf(table))));
      }
      cmds.add(cmd("add", "rule", ruleRef(chainOf(table)).set("expr", F.arrayNode().add(setMark(desired.mask(), net.getValue())))));
    }
    for (IpFamily f : IpFamily.values()) {
      if (!observed.maps().contains(mapOf(f))) {
        cmds.add(cmd("add", "map", setRef(mapOf(f)).put("type", f == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr")
            .put("map", "verdict")));
      }
    }
    // Elements: delete the stale or changed ones, then add the missing ones.
    Map<IpFamily, ArrayNode> deletes = new HashMap<>();
    Map<IpFamily, ArrayNode> adds = new HashMap<>();
    Map<IpPrefix, MarkElement> wanted = new HashMap<>();
    desired.elements().forEach(e -> wanted.put(e.source(), e));
    List<MarkElement> observedSorted = new ArrayList<>(observed.elements().values());
    observedSorted.sort(Comparator.comparing(MarkElement::source));
    for (MarkElement e : observedSorted) {
      if (!e.equals(wanted.get(e.source()))) {
        deletes.computeIfAbsent(e.family(), k -> F.arrayNode()).add(e.source().addressText());
      }
    }
    List<MarkElement> desiredSorted = new ArrayList<>(desired.elements());
    desiredSorted.sort(Comparator.comparing(MarkElement::source));
    for (MarkElement e : desiredSorted) {
      if (!e.equals(observed.elements().get(e.source()))) {
        ArrayNode pair = F.arrayNode();
        pair.add(F.objectNode().set("elem", F.objectNode().put("val", e.source().addressText()).put("comment", e.comment())));
        pair.add(F.objectNode().set("jump", F.objectNode().put("target", chainOf(e.table()))));
        adds.computeIfAbsent(e.family(), k -> F.arrayNode()).add(pair);
      }
    }
    for (IpFamily f : IpFamily.values()) {
      if (deletes.containsKey(f)) {
        cmds.add(cmd("delete", "element", setRef(mapOf(f)).set("elem", deletes.get(f))));
      }
    }
    for (IpFamily f : IpFamily.values()) {
      if (adds.containsKey(f)) {
        cmds.add(cmd("add", "element", setRef(mapOf(f)).set("elem", adds.get(f))));
      }
    }
    for (String hook : List.of(PREROUTING, OUTPUT)) {
      Boolean ok = observed.hookChains().get(hook);
      if (Boolean.TRUE.equals(ok)) {
        continue;
      }
      if (ok != null) {
        cmds.add(cmd("delete", "chain", chainRef(hook)));
      }
      ObjectNode chain = chainRef(hook).put("type", hook.equals(PREROUTING) ? "filter" : "route")
          .put("hook", hook.equals(PREROUTING) ? "prerouting" : "output").put("prio", MANGLE_PRIORITY)
          .put("policy", "accept");
      cmds.add(cmd("add", "chain", chain));
      for (IpFamily f : IpFamily.values()) {
        cmds.add(cmd("add", "rule", ruleRef(hook).set("expr", vmapRule(f))));
      }
    }
    replyCommands(observed, desired, cmds);
    // Chains of networks no longer used, after the elements that jumped to them are gone.
    for (long table : observed.networkChains().keySet()) {
      if (!desired.networkMarks().containsKey(table)) {
        cmds.add(cmd("delete", "chain", chainRef(chainOf(table))));
      }
    }
    return cmds;
  }

  /** The reply chain and its set of uplinks: present exactly while some uplink needs them. */
  private static void replyCommands(MarkState observed, MarkPlan desired, ArrayNode cmds) {
    Boolean chainOk = observed.hookChains().get(REPLY);
    if (desired.replyIfaces().isEmpty()) {
      if (chainOk != null) {
        cmds.add(cmd("delete", "chain", chainRef(REPLY)));
      }
      if (observed.replyIfaces().isPresent()) {
        cmds.add(cmd("delete", "set", setRef(REPLY_IFACES)));
      }
      return;
    }
    Set<String> have = observed.replyIfaces().orElse(Set.of());
    if (observed.replyIfaces().isEmpty()) {
      cmds.add(cmd("add", "set", setRef(REPLY_IFACES).put("type", "ifname")));
    }
    List<String> gone = have.stream().filter(n -> !desired.replyIfaces().contains(n)).sorted().toList();
    List<String> fresh = desired.replyIfaces().stream().filter(n -> !have.contains(n)).sorted().toList();
    if (!gone.isEmpty()) {
      ArrayNode elems = F.arrayNode();
      gone.forEach(elems::add);
      cmds.add(cmd("delete", "element", setRef(REPLY_IFACES).set("elem", elems)));
    }
    if (!fresh.isEmpty()) {
      ArrayNode elems = F.arrayNode();
      fresh.forEach(elems::add);
      cmds.add(cmd("add", "element", setRef(REPLY_IFACES).set("elem", elems)));
    }
    if (!Boolean.TRUE.equals(chainOk)) {
      if (chainOk != null) {
        cmds.add(cmd("delete", "chain", chainRef(REPLY)));
      }
      cmds.add(cmd("add", "chain", chainRef(REPLY).put("type", "filter").put("hook", "prerouting")
          .put("prio", REPLY_PRIORITY).put("policy", "accept")));
      cmds.add(cmd("add", "rule", ruleRef(REPLY).set("expr", replyRule())));
    }
  }

  /** {@code iifname @mark_reply_ifaces ip daddr vmap @mark_v4} (IPv4 only: IPv6 has no rp_filter setting). */
  static ArrayNode replyRule() {
    ObjectNode match = F.objectNode();
    match.put("op", "==");
    match.set("left", F.objectNode().set("meta", F.objectNode().put("key", "iifname")));
    match.put("right", "@" + REPLY_IFACES);
    ObjectNode vmap = F.objectNode();
    vmap.set("key", F.objectNode().set("payload", F.objectNode().put("protocol", "ip").put("field", "daddr")));
    vmap.put("data", "@" + mapOf(IpFamily.V4));
    return F.arrayNode().add(F.objectNode().set("match", match)).add(F.objectNode().set("vmap", vmap));
  }

  /**
   * A transaction of ours on the SNAT part of the table (EgressNftables, no base repair) has just
   * committed: the mark objects are as they were, so the next {@link #observe} need not list the whole
   * table again (with every SNAT element in it) only because the generation moved.
   */
  public synchronized void snatCommitted() {
    cache.committedElsewhere();
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
    ObjectNode doc = F.objectNode();
    doc.set("nftables", commands);
    try {
      client.run(doc);
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
      bySource.putAll(((ElementPatch) later).bySource);
      return this;
    }
  }

  /** A mark element the kernel refused, alone, with why. */
  public record Refusal(String source, String reason) {}

  /**
   * As {@link #run}, in transactions of bounded size: every command but the element additions first (when that
   * fails, the failure is thrown), then the additions in chunks of at most {@link
   * EgressNftables#MAX_ELEMENTS_PER_TRANSACTION}; a refused chunk is split until the refused elements stand alone,
   * which are returned (every other element is applied).
   */
  public synchronized List<Refusal> runInBatches(ArrayNode commands) {
    int elements = 0;
    for (JsonNode c : commands) {
      elements += c.path("add").path("element").path("elem").size();
    }
    if (elements <= EgressNftables.MAX_ELEMENTS_PER_TRANSACTION) {
      run(commands);
      return List.of();
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
    run(first);
    List<Refusal> refused = new ArrayList<>();
    for (JsonNode c : additions) {
      JsonNode elem = c.path("add").path("element").path("elem");
      List<JsonNode> all = new ArrayList<>();
      elem.forEach(all::add);
      for (int i = 0; i < all.size(); i += EgressNftables.MAX_ELEMENTS_PER_TRANSACTION) {
        addAlone(c.path("add").path("element"), all.subList(i, Math.min(all.size(), i + EgressNftables.MAX_ELEMENTS_PER_TRANSACTION)),
            refused);
      }
    }
    return refused;
  }

  private void addAlone(JsonNode ref, List<JsonNode> chunk, List<Refusal> refused) {
    ObjectNode body = ((ObjectNode) ref).deepCopy();
    ArrayNode elems = body.putArray("elem");
    chunk.forEach(elems::add);
    try {
      run(F.arrayNode().add(cmd("add", "element", body)));
    } catch (NftException.PermissionDenied e) {
      throw e;
    } catch (NftException e) {
      if (chunk.size() == 1) {
        refused.add(new Refusal(chunk.get(0).path(0).path("elem").path("val").asText(), e.getMessage()));
        return;
      }
      int mid = chunk.size() / 2;
      addAlone(ref, chunk.subList(0, mid), refused);
      addAlone(ref, chunk.subList(mid, chunk.size()), refused);
    }
  }

  /** Runs the commands as one transaction; nothing when empty. */
  public synchronized void run(ArrayNode commands) {
    if (commands.isEmpty()) {
      return;
    }
    ObjectNode doc = F.objectNode();
    doc.set("nftables", commands);
    cache.invalidate();
    client.run(doc);
  }

  static ArrayNode vmapRule(IpFamily f) {
    ObjectNode vmap = F.objectNode();
    vmap.set("key", F.objectNode().set("payload", F.objectNode().put("protocol", f.nftName()).put("field", "saddr")));
    vmap.put("data", "@" + mapOf(f));
    return F.arrayNode().add(F.objectNode().set("vmap", vmap));
  }

  static ObjectNode setMark(long mask, long mark) {
    ObjectNode meta = F.objectNode().set("meta", F.objectNode().put("key", "mark"));
    ArrayNode and = F.arrayNode().add(meta.deepCopy()).add(~mask & 0xffffffffL);
    ArrayNode or = F.arrayNode().add(F.objectNode().set("&", and)).add(mark);
    ObjectNode mangle = F.objectNode();
    mangle.set("key", meta);
    mangle.set("value", F.objectNode().set("|", or));
    return F.objectNode().set("mangle", mangle);
  }

  private static ObjectNode chainRef(String name) {
    return F.objectNode().put("family", FAMILY).put("table", TABLE).put("name", name);
  }

  private static ObjectNode ruleRef(String chain) {
    return F.objectNode().put("family", FAMILY).put("table", TABLE).put("chain", chain);
  }

  private static ObjectNode setRef(String name) {
    return F.objectNode().put("family", FAMILY).put("table", TABLE).put("name", name);
  }

  private static ObjectNode cmd(String verb, String object, ObjectNode body) {
    ObjectNode inner = F.objectNode();
    inner.set(object, body);
    return F.objectNode().set(verb, inner);
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

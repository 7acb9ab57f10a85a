package io.egressservice.nft;

import io.egressservice.kernel.NftException;
import io.egressservice.kernel.Nftables;
import static io.egressservice.nft.EgressNftables.CHAIN;
import static io.egressservice.nft.EgressNftables.CHAIN_PRIORITY;
import static io.egressservice.nft.EgressTableLayout.expectedRuleExpressions;
import static io.egressservice.nft.EgressTableLayout.inClusterSet;
import static io.egressservice.nft.EgressTableLayout.nftType;
import static io.egressservice.nft.EgressTableLayout.snatMap;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NftIntervals;
import io.egressservice.netlink.SetElement;
import io.egressservice.nft.EgressNftables.IpRange;
import io.egressservice.nft.EgressNftables.NftState;
import io.egressservice.nft.EgressNftables.SnatElement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * What a listing of the SNAT table says: its elements, and for each base object (maps, sets, chain) whether it
 * is absent, as {@link EgressTableLayout} specifies, or different. The planner repairs from this, so a listing
 * is read once and judged once.
 */
final class EgressListing {
  private EgressListing() {}

  /** Everything parsed from one listing, including what is wrong with the base objects. */
  record Observed(
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
  enum ObjectStatus {
    ABSENT,
    OK,
    WRONG,
    /** Chain only: chain as specified, but its rules are not exactly the six. */
    RULES_DIFFER
  }

  /** A parsed listing and its {@link NftState} (built once: 10,000 elements are not free to copy). */
  record Listing(Observed observed, NftState state) {
    static Listing of(Observed o) {
      return new Listing(o, o.state());
    }
  }

  /**
   * Where the elements of the SNAT maps and in-cluster sets come from: the {@code elem} arrays of a full listing
   * ({@link #LISTED}), or the kernel over nfnetlink ({@link #fromKernel}), next to a listing without them.
   */
  interface Elements {
    /** The elements of SNAT map {@code item} (as listed, of family {@code f}), by source. */
    Map<IpPrefix, SnatElement> snat(JsonNode item, IpFamily f);

    /** The ranges of in-cluster set {@code item}, in any order. */
    List<IpRange> inCluster(JsonNode item, IpFamily f);
  }

  /** The elements as a full listing ({@code nft -j list table}) prints them. */
  static final Elements LISTED = new Elements() {
    @Override
    public Map<IpPrefix, SnatElement> snat(JsonNode item, IpFamily f) {
      Map<IpPrefix, SnatElement> snat = new HashMap<>();
      for (JsonNode e : item.path("elem")) {
        SnatElement el = parseSnatElement(e, f);
        snat.put(el.source(), el);
      }
      return snat;
    }

    @Override
    public List<IpRange> inCluster(JsonNode item, IpFamily f) {
      List<IpRange> ranges = new ArrayList<>();
      for (JsonNode e : item.path("elem")) {
        ranges.add(parseIntervalElement(e, f));
      }
      return ranges;
    }
  };

  /** The elements as the kernel holds them, streamed by {@code client} ({@link Nftables#setElements}). */
  static Elements fromKernel(Nftables client) {
    return new Elements() {
      @Override
      public Map<IpPrefix, SnatElement> snat(JsonNode item, IpFamily f) {
        String map = item.path("name").asText();
        return client.setElements(EgressNftables.FAMILY, EgressNftables.TABLE, map,
            Collectors.toMap(e -> KernelElements.host(e.key(), f, map), e -> snatElement(e, f, map),
                (a, b) -> b, HashMap::new)).orElseGet(HashMap::new);
      }

      @Override
      public List<IpRange> inCluster(JsonNode item, IpFamily f) {
        String set = item.path("name").asText();
        return client.setElements(EgressNftables.FAMILY, EgressNftables.TABLE, set, NftIntervals.collector())
            .orElseGet(List::of).stream()
            .map(r -> new IpRange(KernelElements.host(r.first(), f, set), KernelElements.host(r.last(), f, set)))
            .toList();
      }
    };
  }

  private static SnatElement snatElement(SetElement e, IpFamily f, String map) {
    byte[] target = e.data().orElseThrow(() -> new NftException("element without a value in map " + map + ": " + e));
    return new SnatElement(KernelElements.host(e.key(), f, map), KernelElements.host(target, f, map),
        e.comment().orElse(""));
  }

  /** Parses {@code nft -j list table inet egress_service_agent} (empty: there is no such table). */
  static Observed parse(Optional<JsonNode> listing) {
    return parse(listing, LISTED);
  }

  /**
   * Parses the table's definitions ({@code listing}, with or without elements; empty: there is no such table), the
   * elements from {@code elements}.
   */
  static Observed parse(Optional<JsonNode> listing, Elements elements) {
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
              snat.putAll(elements.snat(m, f));
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
              inCluster.addAll(elements.inCluster(s, f));
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
    inCluster.sort(IpRanges.RANGE_ORDER);
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
}

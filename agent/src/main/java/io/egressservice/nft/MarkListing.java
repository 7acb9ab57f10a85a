package io.egressservice.nft;

import io.egressservice.kernel.Nftables;
import static io.egressservice.nft.MarkNftables.MANGLE_PRIORITY;
import static io.egressservice.nft.MarkNftables.OUTPUT;
import static io.egressservice.nft.MarkNftables.PREROUTING;
import static io.egressservice.nft.MarkNftables.REPLY;
import static io.egressservice.nft.MarkNftables.REPLY_IFACES;
import static io.egressservice.nft.MarkNftables.REPLY_PRIORITY;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.SetElement;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.MarkNftables.MarkState;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.stream.Collector;
import java.util.stream.Collectors;

/**
 * What a listing of the owned table says about mark mode's objects: which maps and hook chains exist and whether
 * each is as {@link MarkCommands} writes it, each network chain's mark and mask as read back, the elements. Objects
 * of ours under a name this cannot read are left out, so the next transaction replaces or leaves them.
 */
final class MarkListing {
  private MarkListing() {}

  /**
   * Where the elements of the mark maps and of the reply set come from: a full listing's {@code elem} arrays ({@link
   * #LISTED}) or the kernel ({@link #fromKernel}).
   */
  interface Elements {
    /** The mark elements of verdict map {@code item} (of family {@code f}): sources that jump to a network chain. */
    Map<IpPrefix, MarkElement> marks(JsonNode item, IpFamily f);

    /** The interface names in set {@code item}. */
    Set<String> names(JsonNode item);
  }

  /** The elements as a full listing ({@code nft -j list table}) prints them. */
  static final Elements LISTED = new Elements() {
    @Override
    public Map<IpPrefix, MarkElement> marks(JsonNode item, IpFamily f) {
      Map<IpPrefix, MarkElement> elements = new HashMap<>();
      for (JsonNode e : item.path("elem")) {
        JsonNode key = e.get(0);
        String addr = key.isObject() ? key.path("elem").path("val").asText() : key.asText();
        String comment = key.isObject() ? key.path("elem").path("comment").asText("") : "";
        String target = e.get(1).path("jump").path("target").asText("");
        Optional<IpPrefix> source = IpPrefix.tryParse(addr);
        if (source.isPresent()) {
          markElement(source.get(), target, comment).ifPresent(m -> elements.put(m.source(), m));
        }
      }
      return elements;
    }

    @Override
    public Set<String> names(JsonNode item) {
      Set<String> names = new HashSet<>();
      item.path("elem").forEach(e -> names.add(e.asText()));
      return names;
    }
  };

  /** The elements as the kernel holds them, streamed by {@code client} ({@link Nftables#setElements}). */
  static Elements fromKernel(Nftables client) {
    return new Elements() {
      @Override
      public Map<IpPrefix, MarkElement> marks(JsonNode item, IpFamily f) {
        String map = item.path("name").asText();
        Collector<SetElement, ?, Map<IpPrefix, MarkElement>> ours = Collector.of(HashMap::new, (m, e) -> {
          boolean jump = e.verdict().map(v -> v.code() == SetElement.Verdict.JUMP).orElse(false);
          byte[] key = e.key();
          if (jump && !e.catchAll() && KernelElements.isAddress(key, f)) {
            markElement(IpPrefix.host(key), e.verdict().get().chain().orElse(""), e.comment().orElse(""))
                .ifPresent(el -> m.put(el.source(), el));
          }
        }, (a, b) -> {
          a.putAll(b);
          return a;
        });
        return client.setElements(EgressNftables.FAMILY, EgressNftables.TABLE, map, ours).orElseGet(HashMap::new);
      }

      @Override
      public Set<String> names(JsonNode item) {
        return client.setElements(EgressNftables.FAMILY, EgressNftables.TABLE, item.path("name").asText(),
            Collectors.mapping(SetElement::keyString, Collectors.toSet())).orElseGet(Set::of);
      }
    };
  }

  /** A source jumping to {@code target}, when that is one of our network chains; otherwise not ours (left out). */
  private static Optional<MarkElement> markElement(IpPrefix source, String target, String comment) {
    if (!target.startsWith("mark_t")) {
      return Optional.empty();
    }
    try {
      return Optional.of(new MarkElement(source, Long.parseLong(target.substring(6)), comment));
    } catch (NumberFormatException e) {
      return Optional.empty(); // not ours: left for the next apply to replace
    }
  }

  /** Parses a {@code nft -j list table} document (or its absence). */
  static MarkState parse(Optional<JsonNode> listing) {
    return parse(listing, LISTED);
  }

  /** Parses the table's definitions ({@code listing}, or its absence), the elements from {@code elements}. */
  static MarkState parse(Optional<JsonNode> listing, Elements contents) {
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
        replyIfaces = Optional.of(contents.names(set));
      }
      JsonNode map = item.path("map");
      if (!map.isMissingNode() && map.path("name").asText().startsWith("mark_v")) {
        String name = map.path("name").asText();
        maps.add(name);
        if (name.equals(MarkNftables.mapOf(IpFamily.V4)) || name.equals(MarkNftables.mapOf(IpFamily.V6))) {
          elements.putAll(contents.marks(map, name.equals(MarkNftables.mapOf(IpFamily.V4)) ? IpFamily.V4 : IpFamily.V6));
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
        boolean rulesOk = rules.size() == 2 && rules.get(0).equals(MarkCommands.vmapRule(IpFamily.V4))
            && rules.get(1).equals(MarkCommands.vmapRule(IpFamily.V6));
        hooks.put(name, hookOk && rulesOk);
      } else if (name.equals(REPLY)) {
        boolean hookOk = chain.path("hook").asText().equals("prerouting") && chain.path("type").asText().equals("filter")
            && chain.path("prio").asInt() == REPLY_PRIORITY;
        hooks.put(name, hookOk && rules.size() == 1 && rules.get(0).equals(MarkCommands.replyRule()));
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
}

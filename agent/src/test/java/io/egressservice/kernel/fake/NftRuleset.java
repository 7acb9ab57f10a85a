package io.egressservice.kernel.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * The nftables ruleset of one fake namespace as data: tables (family, name) holding named counters, sets and maps
 * with their elements, chains with their rules, each with the handle the kernel would give it; and how {@code nft -j
 * list} prints them. Mutable, but only ever changed on a {@link #copy()} that replaces the original once a whole
 * transaction has gone through.
 */
final class NftRuleset {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** Tables in creation order, by "family name". */
  final Map<String, Table> tables = new LinkedHashMap<>();

  static final class Table {
    final String family;
    final String name;
    final long handle;
    long nextHandle = 1;
    final Map<String, Counter> counters = new LinkedHashMap<>();
    final Map<String, NftSet> sets = new LinkedHashMap<>();
    final Map<String, Chain> chains = new LinkedHashMap<>();

    Table(String family, String name, long handle) {
      this.family = family;
      this.name = name;
      this.handle = handle;
    }

    Table copy() {
      Table t = new Table(family, name, handle);
      t.nextHandle = nextHandle;
      counters.forEach((k, v) -> t.counters.put(k, v));
      sets.forEach((k, v) -> t.sets.put(k, v.copy()));
      chains.forEach((k, v) -> t.chains.put(k, v.copy()));
      return t;
    }
  }

  record Counter(String name, long handle, Optional<String> comment) {}

  /** A base chain's hook: type, hook, priority, policy. */
  record Hook(String type, String hook, int prio, String policy) {}

  record RuleEntry(long handle, JsonNode expr, Optional<String> comment) {}

  static final class Chain {
    final String name;
    final long handle;
    Optional<Hook> hook;
    final List<RuleEntry> rules = new ArrayList<>();

    Chain(String name, long handle, Optional<Hook> hook) {
      this.name = name;
      this.handle = handle;
      this.hook = hook;
    }

    Chain copy() {
      Chain c = new Chain(name, handle, hook);
      c.rules.addAll(rules);
      return c;
    }
  }

  /** A set or map element: its key range (first == last outside interval sets), its value, its comment. */
  record Element(byte[] first, byte[] last, Optional<JsonNode> value, Optional<String> comment) {}

  static final class NftSet {
    final String name;
    final long handle;
    final boolean map;
    final String type;
    final Optional<String> dataType;
    final List<String> flags;
    /** By first key, unsigned. */
    final TreeMap<byte[], Element> elements = new TreeMap<>(NftTypes::compare);

    NftSet(String name, long handle, boolean map, String type, Optional<String> dataType, List<String> flags) {
      this.name = name;
      this.handle = handle;
      this.map = map;
      this.type = type;
      this.dataType = dataType;
      this.flags = List.copyOf(flags);
    }

    boolean interval() {
      return flags.contains("interval");
    }

    boolean sameSpec(boolean isMap, String t, Optional<String> data, List<String> f) {
      return map == isMap && type.equals(t) && dataType.equals(data) && flags.equals(f);
    }

    NftSet copy() {
      NftSet s = new NftSet(name, handle, map, type, dataType, flags);
      s.elements.putAll(elements);
      return s;
    }
  }

  NftRuleset copy() {
    NftRuleset r = new NftRuleset();
    tables.forEach((k, v) -> r.tables.put(k, v.copy()));
    return r;
  }

  static String key(String family, String name) {
    return family + " " + name;
  }

  // ------------------------------------------------------------------------------------------------ listing

  /** {@code nft -j list ruleset} (with {@code elements} false: {@code nft -j -t}, sets without their elements). */
  ArrayNode listRuleset(boolean elements) {
    ArrayNode items = listStart();
    tables.values().forEach(t -> listTable(t, items, elements));
    return items;
  }

  static ArrayNode listStart() {
    ArrayNode items = F.arrayNode();
    items.addObject().putObject("metainfo").put("version", "1.0.6").put("release_name", "Lester Gooch #5")
        .put("json_schema_version", 1);
    return items;
  }

  /** A table as nft 1.0.6 lists it: the table, its counters, sets and maps, chains, then each chain's rules. */
  static void listTable(Table t, ArrayNode items, boolean elements) {
    items.addObject().putObject("table").put("family", t.family).put("name", t.name).put("handle", t.handle);
    for (Counter c : t.counters.values()) {
      ObjectNode o = items.addObject().putObject("counter").put("family", t.family).put("name", c.name())
          .put("table", t.name).put("handle", c.handle());
      c.comment().ifPresent(x -> o.put("comment", x));
      o.put("packets", 0).put("bytes", 0);
    }
    for (NftSet s : t.sets.values()) {
      items.add(listSet(t, s, elements));
    }
    for (Chain c : t.chains.values()) {
      ObjectNode o = items.addObject().putObject("chain").put("family", t.family).put("table", t.name)
          .put("name", c.name).put("handle", c.handle);
      c.hook.ifPresent(h -> o.put("type", h.type()).put("hook", h.hook()).put("prio", h.prio())
          .put("policy", h.policy()));
    }
    for (Chain c : t.chains.values()) {
      for (RuleEntry r : c.rules) {
        ObjectNode o = items.addObject().putObject("rule").put("family", t.family).put("table", t.name)
            .put("chain", c.name).put("handle", r.handle());
        r.comment().ifPresent(x -> o.put("comment", x));
        o.set("expr", r.expr().deepCopy());
      }
    }
  }

  static ObjectNode listSet(Table t, NftSet s, boolean elements) {
    ObjectNode item = F.objectNode();
    ObjectNode o = item.putObject(s.map ? "map" : "set").put("family", t.family).put("name", s.name)
        .put("table", t.name).put("type", s.type).put("handle", s.handle);
    s.dataType.ifPresent(d -> o.put("map", d));
    if (!s.flags.isEmpty()) {
      ArrayNode flags = o.putArray("flags");
      s.flags.forEach(flags::add);
    }
    if (elements && !s.elements.isEmpty()) {
      ArrayNode elem = o.putArray("elem");
      for (Element e : s.elements.values()) {
        JsonNode key = NftTypes.print(s.type, e.first(), e.last());
        if (e.comment().isPresent()) {
          ObjectNode wrapped = F.objectNode();
          wrapped.putObject("elem").set("val", key);
          ((ObjectNode) wrapped.get("elem")).put("comment", e.comment().get());
          key = wrapped;
        }
        if (s.map) {
          elem.addArray().add(key).add(e.value().orElseThrow().deepCopy());
        } else {
          elem.add(key);
        }
      }
    }
    return item;
  }
}

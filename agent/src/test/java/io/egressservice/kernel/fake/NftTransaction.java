package io.egressservice.kernel.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.LongNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.kernel.fake.NftRuleset.Chain;
import io.egressservice.kernel.fake.NftRuleset.Counter;
import io.egressservice.kernel.fake.NftRuleset.Element;
import io.egressservice.kernel.fake.NftRuleset.Hook;
import io.egressservice.kernel.fake.NftRuleset.NftSet;
import io.egressservice.kernel.fake.NftRuleset.RuleEntry;
import io.egressservice.kernel.fake.NftRuleset.Table;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One libnftables-json document run against a copy of the ruleset, command by command, refused as nft 1.0.6 on
 * Linux refuses: an object in a table or set that is not there ENOENT, {@code create} of one that is there EEXIST,
 * an element added over another value EEXIST, a deleted element, chain, set or rule that is not there ENOENT, a chain
 * or set still referenced EBUSY. The caller keeps the copy only when every command went through.
 */
final class NftTransaction {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  /** A refusal: nft's errno text and the command it refused. */
  static final class Refused extends RuntimeException {
    private static final long serialVersionUID = 1L;

    Refused(String strerror, JsonNode command) {
      super("Error: Could not process rule: " + strerror + "\n" + command);
    }
  }

  static final String ENOENT = "No such file or directory";
  static final String EEXIST = "File exists";
  static final String EBUSY = "Device or resource busy";
  static final String EINVAL = "Invalid argument";

  private final NftRuleset rs;
  private final ArrayNode output = F.arrayNode();
  private boolean wrote;
  private JsonNode command;

  NftTransaction(NftRuleset rs) {
    this.rs = rs;
  }

  /** Whether a command changed (or could have changed) the ruleset: the kernel then commits a generation. */
  boolean wrote() {
    return wrote;
  }

  /** What {@code list} commands printed, an empty array otherwise. */
  ArrayNode output() {
    return output;
  }

  void run(JsonNode doc) {
    JsonNode cmds = doc.path("nftables");
    if (!cmds.isArray()) {
      throw new Refused(EINVAL, doc);
    }
    for (JsonNode c : cmds) {
      command = c;
      Iterator<Map.Entry<String, JsonNode>> verbs = c.properties().iterator();
      if (!verbs.hasNext()) {
        throw new Refused(EINVAL, c);
      }
      Map.Entry<String, JsonNode> verb = verbs.next();
      if (verb.getKey().equals("metainfo")) {
        continue;
      }
      Iterator<Map.Entry<String, JsonNode>> objects = verb.getValue().properties().iterator();
      if (!objects.hasNext()) {
        throw new Refused(EINVAL, c);
      }
      Map.Entry<String, JsonNode> object = objects.next();
      one(verb.getKey(), object.getKey(), object.getValue());
    }
  }

  private void one(String verb, String object, JsonNode body) {
    if (verb.equals("list")) {
      list(object, body);
      return;
    }
    wrote = true;
    switch (object) {
      case "table" -> table(verb, body);
      case "chain" -> chain(verb, body);
      case "rule" -> rule(verb, body);
      case "set", "map" -> set(verb, object.equals("map"), body);
      case "element" -> element(verb, body);
      case "counter" -> counter(verb, body);
      default -> throw new UnsupportedOperationException("the fake nftables does not model '" + verb + " " + object
          + "'");
    }
  }

  // ---------------------------------------------------------------------------------------------- tables

  private void table(String verb, JsonNode b) {
    String key = NftRuleset.key(b.path("family").asText(), b.path("name").asText());
    Table t = rs.tables.get(key);
    switch (verb) {
      case "add", "create" -> {
        if (t != null && verb.equals("create")) {
          throw refused(EEXIST);
        }
        if (t == null) {
          long handle = rs.tables.values().stream().mapToLong(x -> x.handle).max().orElse(0) + 1;
          rs.tables.put(key, new Table(b.path("family").asText(), b.path("name").asText(), handle));
        }
      }
      case "delete", "destroy" -> {
        if (t == null && verb.equals("delete")) {
          throw refused(ENOENT);
        }
        rs.tables.remove(key);
      }
      case "flush" -> {
        Table x = existing(t);
        x.chains.values().forEach(c -> c.rules.clear());
        x.sets.values().forEach(s -> s.elements.clear());
      }
      default -> throw unsupported(verb, "table");
    }
  }

  private Table table(JsonNode b) {
    return existing(rs.tables.get(NftRuleset.key(b.path("family").asText(), b.path("table").asText())));
  }

  private <T> T existing(T o) {
    if (o == null) {
      throw refused(ENOENT);
    }
    return o;
  }

  // ---------------------------------------------------------------------------------------------- chains

  private void chain(String verb, JsonNode b) {
    Table t = table(b);
    String name = b.path("name").asText();
    Chain c = t.chains.get(name);
    switch (verb) {
      case "add", "create" -> {
        if (c != null && verb.equals("create")) {
          throw refused(EEXIST);
        }
        Optional<Hook> hook = b.has("hook")
            ? Optional.of(new Hook(b.path("type").asText("filter"), b.path("hook").asText(), b.path("prio").asInt(),
                b.path("policy").asText("accept")))
            : Optional.empty();
        if (c == null) {
          t.chains.put(name, new Chain(name, t.nextHandle++, hook));
        } else if (hook.isPresent()) {
          // An existing chain takes a new policy; another type, hook or priority the kernel refuses (approximated).
          if (c.hook.isEmpty() || !sameBaseChain(c.hook.get(), hook.get())) {
            throw refused(EEXIST);
          }
          c.hook = hook;
        }
      }
      case "delete", "destroy" -> {
        if (c == null) {
          if (verb.equals("delete")) {
            throw refused(ENOENT);
          }
          return;
        }
        if (referencesChain(t, name)) {
          throw refused(EBUSY);
        }
        t.chains.remove(name);
      }
      case "flush" -> existing(c).rules.clear();
      default -> throw unsupported(verb, "chain");
    }
  }

  private static boolean sameBaseChain(Hook a, Hook b) {
    return a.type().equals(b.type()) && a.hook().equals(b.hook()) && a.prio() == b.prio();
  }

  /** Whether a rule of another chain or a verdict map element jumps or goes to {@code chain}. */
  private static boolean referencesChain(Table t, String chain) {
    for (Chain c : t.chains.values()) {
      if (c.name.equals(chain)) {
        continue;
      }
      for (RuleEntry r : c.rules) {
        if (!targets(r.expr(), chain).isEmpty()) {
          return true;
        }
      }
    }
    for (NftSet s : t.sets.values()) {
      for (Element e : s.elements.values()) {
        if (e.value().isPresent() && !targets(e.value().get(), chain).isEmpty()) {
          return true;
        }
      }
    }
    return false;
  }

  /** The jump and goto targets in {@code node} that are {@code chain} (every target when {@code chain} is null). */
  private static List<String> targets(JsonNode node, String chain) {
    List<String> out = new ArrayList<>();
    collectTargets(node, chain, out);
    return out;
  }

  private static void collectTargets(JsonNode node, String chain, List<String> out) {
    if (node.isObject()) {
      for (String v : List.of("jump", "goto")) {
        JsonNode target = node.path(v).path("target");
        if (target.isTextual() && (chain == null || target.asText().equals(chain))) {
          out.add(target.asText());
        }
      }
    }
    node.forEach(child -> collectTargets(child, chain, out));
  }

  /** The sets a rule names ({@code "@name"}). */
  private static List<String> setReferences(JsonNode node) {
    List<String> out = new ArrayList<>();
    collectSets(node, out);
    return out;
  }

  private static void collectSets(JsonNode node, List<String> out) {
    if (node.isTextual() && node.asText().startsWith("@")) {
      out.add(node.asText().substring(1));
    }
    node.forEach(child -> collectSets(child, out));
  }

  // ----------------------------------------------------------------------------------------------- rules

  private void rule(String verb, JsonNode b) {
    Table t = table(b);
    Chain c = existing(t.chains.get(b.path("chain").asText()));
    switch (verb) {
      case "add", "insert", "create" -> {
        RuleEntry r = new RuleEntry(t.nextHandle++, checkedExpr(t, b), Optional.ofNullable(b.get("comment"))
            .map(JsonNode::asText));
        if (verb.equals("insert")) {
          c.rules.add(0, r);
        } else {
          c.rules.add(r);
        }
      }
      case "replace" -> {
        int at = ruleAt(c, b);
        c.rules.set(at, new RuleEntry(c.rules.get(at).handle(), checkedExpr(t, b),
            Optional.ofNullable(b.get("comment")).map(JsonNode::asText)));
      }
      case "delete", "destroy" -> {
        if (verb.equals("destroy") && c.rules.stream().noneMatch(r -> r.handle() == b.path("handle").asLong())) {
          return;
        }
        c.rules.remove(ruleAt(c, b));
      }
      default -> throw unsupported(verb, "rule");
    }
  }

  private int ruleAt(Chain c, JsonNode b) {
    if (!b.has("handle")) {
      throw refused(EINVAL);
    }
    for (int i = 0; i < c.rules.size(); i++) {
      if (c.rules.get(i).handle() == b.path("handle").asLong()) {
        return i;
      }
    }
    throw refused(ENOENT);
  }

  /** The expression as the kernel will list it, once its sets and chains are known to exist. */
  private JsonNode checkedExpr(Table t, JsonNode b) {
    JsonNode expr = b.path("expr");
    if (!expr.isArray()) {
      throw refused(EINVAL);
    }
    for (String set : setReferences(expr)) {
      existing(t.sets.get(set));
    }
    for (String target : targets(expr, null)) {
      existing(t.chains.get(target));
    }
    return listedForm(expr.deepCopy());
  }

  /**
   * What nft prints back for what was written, where the two differ: {@code meta mark set meta mark & A | B} is
   * listed with B's bits folded into A ({@code & (A | B) | B}, the same rule).
   */
  private static JsonNode listedForm(JsonNode expr) {
    for (JsonNode statement : expr) {
      JsonNode or = statement.path("mangle").path("value").path("|");
      JsonNode and = or.path(0).path("&");
      if (or.isArray() && or.size() == 2 && or.get(1).canConvertToLong() && and.isArray() && and.size() == 2
          && and.get(1).canConvertToLong()) {
        ((ArrayNode) and).set(1, LongNode.valueOf(and.get(1).asLong() | or.get(1).asLong()));
      }
    }
    return expr;
  }

  // -------------------------------------------------------------------------------------------- sets, maps

  private void set(String verb, boolean isMap, JsonNode b) {
    Table t = table(b);
    String name = b.path("name").asText();
    NftSet s = t.sets.get(name);
    switch (verb) {
      case "add", "create" -> {
        String type = b.path("type").asText();
        Optional<String> data = isMap ? Optional.of(b.path("map").asText()) : Optional.empty();
        List<String> flags = new ArrayList<>();
        b.path("flags").forEach(f -> flags.add(f.asText()));
        if (s != null) {
          if (verb.equals("create") || !s.sameSpec(isMap, type, data, flags)) {
            throw refused(EEXIST);
          }
          return;
        }
        NftTypes.checkKeyType(type);
        data.ifPresent(NftTypes::checkDataType);
        if (b.has("elem")) {
          throw new UnsupportedOperationException("the fake nftables takes elements in 'add element' only");
        }
        t.sets.put(name, new NftSet(name, t.nextHandle++, isMap, type, data, flags));
      }
      case "delete", "destroy" -> {
        if (s == null) {
          if (verb.equals("delete")) {
            throw refused(ENOENT);
          }
          return;
        }
        boolean used = t.chains.values().stream().flatMap(c -> c.rules.stream())
            .anyMatch(r -> setReferences(r.expr()).contains(name));
        if (used) {
          throw refused(EBUSY);
        }
        t.sets.remove(name);
      }
      case "flush" -> existing(s).elements.clear();
      default -> throw unsupported(verb, isMap ? "map" : "set");
    }
  }

  private void element(String verb, JsonNode b) {
    Table t = table(b);
    NftSet s = existing(t.sets.get(b.path("name").asText()));
    JsonNode elems = b.path("elem");
    if (!elems.isArray()) {
      throw refused(EINVAL);
    }
    for (JsonNode e : elems) {
      Element el = parseElement(t, s, e, !verb.equals("delete") && !verb.equals("destroy"));
      switch (verb) {
        case "add", "create" -> addElement(s, el, verb.equals("create"));
        case "delete", "destroy" -> {
          Element held = s.elements.get(el.first());
          if (held == null || !java.util.Arrays.equals(held.last(), el.last())) {
            if (verb.equals("delete")) {
              throw refused(ENOENT);
            }
            continue;
          }
          s.elements.remove(el.first());
        }
        default -> throw unsupported(verb, "element");
      }
    }
  }

  private void addElement(NftSet s, Element el, boolean create) {
    Element held = s.elements.get(el.first());
    if (held != null && java.util.Arrays.equals(held.last(), el.last())) {
      if (create || !held.value().equals(el.value())) {
        throw refused(EEXIST);
      }
      return; // the same element again: nothing changes, its comment neither
    }
    if (s.interval()) {
      Map.Entry<byte[], Element> below = s.elements.floorEntry(el.last());
      if (below != null && NftTypes.compare(below.getValue().last(), el.first()) >= 0) {
        throw refused(EEXIST); // overlaps an interval that is there
      }
    } else if (held != null) {
      throw refused(EEXIST);
    }
    s.elements.put(el.first(), el);
  }

  private Element parseElement(Table t, NftSet s, JsonNode e, boolean adding) {
    JsonNode key = s.map && e.isArray() ? e.path(0) : e;
    Optional<JsonNode> value = Optional.empty();
    if (s.map) {
      if (e.isArray() && e.size() == 2) {
        value = Optional.of(value(t, s, e.get(1)));
      } else if (adding) {
        throw refused(EINVAL);
      }
    }
    Optional<String> comment = Optional.empty();
    if (key.has("elem")) {
      comment = Optional.ofNullable(key.get("elem").get("comment")).map(JsonNode::asText);
      key = key.get("elem").path("val");
    }
    Optional<byte[][]> range = s.interval() ? NftTypes.range(s.type, key)
        : key.isTextual() ? NftTypes.key(s.type, key.asText()).map(k -> new byte[][] {k, k}) : Optional.empty();
    if (range.isEmpty() || NftTypes.compare(range.get()[0], range.get()[1]) > 0) {
      throw refused(EINVAL);
    }
    return new Element(range.get()[0], range.get()[1], value, comment);
  }

  private JsonNode value(Table t, NftSet s, JsonNode v) {
    String type = s.dataType.orElseThrow();
    if (type.equals("verdict")) {
      if (v.isTextual() && List.of("accept", "drop", "continue", "return").contains(v.asText())) {
        return F.objectNode().putNull(v.asText());
      }
      List<String> targets = targets(v, null);
      if (targets.size() != 1 || v.size() != 1) {
        throw refused(EINVAL);
      }
      existing(t.chains.get(targets.get(0)));
      return v.deepCopy();
    }
    if (!v.isTextual() || NftTypes.key(type, v.asText()).isEmpty()) {
      throw refused(EINVAL);
    }
    return F.textNode(NftTypes.print(type, NftTypes.key(type, v.asText()).get(), NftTypes.key(type, v.asText()).get())
        .asText());
  }

  // -------------------------------------------------------------------------------------------- counters

  private void counter(String verb, JsonNode b) {
    Table t = table(b);
    String name = b.path("name").asText();
    Counter c = t.counters.get(name);
    switch (verb) {
      case "add", "create" -> {
        if (c != null && verb.equals("create")) {
          throw refused(EEXIST);
        }
        if (c == null) {
          t.counters.put(name, new Counter(name, t.nextHandle++, Optional.ofNullable(b.get("comment"))
              .map(JsonNode::asText)));
        }
      }
      case "delete", "destroy" -> {
        if (c == null && verb.equals("delete")) {
          throw refused(ENOENT);
        }
        t.counters.remove(name);
      }
      default -> throw unsupported(verb, "counter");
    }
  }

  // -------------------------------------------------------------------------------------------------- list

  private void list(String object, JsonNode b) {
    switch (object) {
      case "ruleset" -> output.addAll(rs.listRuleset(true));
      case "table" -> {
        Table t = existing(rs.tables.get(NftRuleset.key(b.path("family").asText(), b.path("name").asText())));
        ArrayNode items = NftRuleset.listStart();
        NftRuleset.listTable(t, items, true);
        output.addAll(items);
      }
      case "set", "map" -> {
        Table t = table(b);
        NftSet s = existing(t.sets.get(b.path("name").asText()));
        ArrayNode items = NftRuleset.listStart();
        items.add(NftRuleset.listSet(t, s, true));
        output.addAll(items);
      }
      default -> throw unsupported("list", object);
    }
  }

  private Refused refused(String strerror) {
    return new Refused(strerror, command);
  }

  private static UnsupportedOperationException unsupported(String verb, String object) {
    return new UnsupportedOperationException("the fake nftables does not model '" + verb + " " + object + "'");
  }

  /** An {@code {"nftables":[...]}} document around {@code items}. */
  static ObjectNode document(ArrayNode items) {
    ObjectNode doc = F.objectNode();
    doc.set("nftables", items);
    return doc;
  }
}

package io.egressservice.nft.table;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.nft.table.NftTable.Chain;
import io.egressservice.nft.table.NftTable.Counter;
import io.egressservice.nft.table.NftTable.Element;
import io.egressservice.nft.table.NftTable.NftSet;
import io.egressservice.nft.table.NftTable.SetChange;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * One libnftables-json document ({@code {"nftables":[...]}}, one transaction: all of it or nothing) for a table as
 * data: the whole table replaced, or only the elements that changed. Pure: it neither lists nor runs anything.
 *
 * <p>A replacement is {@code add table; delete table; add table ...} in one transaction: whatever was there goes
 * and the new table takes its place at once, with no moment without the table (and no error when it was absent).
 */
public final class TableWriter {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private TableWriter() {}

  /**
   * The transaction that takes the table from {@code known} (what it held as last written or read; empty: unknown)
   * to {@code desired}: when the two differ only in the elements of {@code byElement} sets, only those elements
   * that differ are deleted and added (no command at all when none does); otherwise the table is replaced whole.
   */
  public static ObjectNode transaction(NftTable desired, Optional<NftTable> known, Set<String> byElement) {
    if (!sameShape(desired, known, byElement)) {
      return replace(desired);
    }
    List<SetChange> changes = new ArrayList<>();
    for (NftSet want : desired.sets()) {
      if (!byElement.contains(want.name())) {
        continue;
      }
      List<Element> have = known.get().set(want.name()).orElseThrow().elements();
      Map<JsonNode, Element> wantByKey = byKey(want.elements());
      Map<JsonNode, Element> haveByKey = byKey(have);
      // An element whose key stays but whose value, timeout or comment changes is deleted and added again.
      List<Element> removed = have.stream().filter(e -> !e.equals(wantByKey.get(e.key()))).toList();
      List<Element> added = want.elements().stream().filter(e -> !e.equals(haveByKey.get(e.key()))).toList();
      changes.add(new SetChange(want.name(), added, removed));
    }
    return elementChanges(desired.family(), desired.name(), changes);
  }

  /** Whether {@code desired} differs from {@code known} (present) at most in the elements of {@code byElement}. */
  public static boolean sameShape(NftTable desired, Optional<NftTable> known, Set<String> byElement) {
    return known.isPresent() && known.get().shape(byElement).equals(desired.shape(byElement));
  }

  /** The whole table, replacing whatever table of its family and name there is. */
  public static ObjectNode replace(NftTable t) {
    ArrayNode cmds = F.arrayNode();
    cmds.add(command("add", "table", tableRef(t)));
    cmds.add(command("delete", "table", tableRef(t)));
    cmds.add(command("add", "table", tableRef(t)));
    for (Counter c : t.counters()) {
      cmds.add(command("add", "counter", ref(t).put("name", c.name()).put("comment", c.comment())));
    }
    for (NftSet s : t.sets()) {
      ObjectNode set = ref(t).put("name", s.name());
      if (s.type().size() == 1) {
        set.put("type", s.type().get(0));
      } else {
        ArrayNode concat = set.putArray("type");
        s.type().forEach(concat::add);
      }
      s.mapType().ifPresent(m -> set.put("map", m));
      if (!s.flags().isEmpty()) {
        ArrayNode flags = set.putArray("flags");
        s.flags().stream().sorted().forEach(flags::add);
      }
      cmds.add(command("add", s.mapType().isPresent() ? "map" : "set", set));
      if (!s.elements().isEmpty()) {
        cmds.add(elements("add", t.family(), t.name(), s.name(), s.elements(), false));
      }
    }
    for (Chain c : t.chains()) {
      ObjectNode chain = ref(t).put("name", c.name());
      c.hook().ifPresent(h -> chain.put("type", h.type()).put("hook", h.hook()).put("prio", h.priority())
          .put("policy", h.policy()));
      cmds.add(command("add", "chain", chain));
      for (JsonNode rule : c.rules()) {
        ObjectNode r = ref(t).put("chain", c.name());
        r.set("expr", rule.deepCopy());
        cmds.add(command("add", "rule", r));
      }
    }
    return document(cmds);
  }

  /** Removes the table of that family and name, and is a no-op when there is none. */
  public static ObjectNode remove(String family, String name) {
    ObjectNode table = F.objectNode().put("family", family).put("name", name);
    ArrayNode cmds = F.arrayNode();
    cmds.add(command("add", "table", table));
    cmds.add(command("delete", "table", table.deepCopy()));
    return document(cmds);
  }

  /**
   * Element deletions, then additions, in the sets of {@code table} (which the kernel must hold with those sets);
   * sets without a change get no command. Each deleted element must be there and each added one must not, or the
   * kernel refuses the whole transaction.
   */
  public static ObjectNode elementChanges(String family, String table, Collection<SetChange> changes) {
    ArrayNode cmds = F.arrayNode();
    for (SetChange c : changes) {
      if (!c.removed().isEmpty()) {
        cmds.add(elements("delete", family, table, c.set(), c.removed(), true));
      }
    }
    for (SetChange c : changes) {
      if (!c.added().isEmpty()) {
        cmds.add(elements("add", family, table, c.set(), c.added(), false));
      }
    }
    return document(cmds);
  }

  /** Whether the document has no command (nothing to run). */
  public static boolean isEmpty(JsonNode document) {
    return document.path("nftables").isEmpty();
  }

  /**
   * An element as libnftables-json writes it. nft 1.0.6 reads an element's timeout in whole seconds only (and
   * ignores a timeout written any other way): a timeout is rounded up to the next second.
   */
  static JsonNode element(Element e, boolean keyOnly) {
    if (keyOnly || (e.timeout().isEmpty() && e.comment().isEmpty())) {
      return keyOnly || e.value().isEmpty() ? e.key().deepCopy() : pair(e.key().deepCopy(), e);
    }
    ObjectNode elem = F.objectNode();
    ObjectNode body = elem.putObject("elem");
    body.set("val", e.key().deepCopy());
    e.timeout().ifPresent(t -> body.put("timeout", seconds(t)));
    e.comment().ifPresent(c -> body.put("comment", c));
    return e.value().isEmpty() ? elem : pair(elem, e);
  }

  private static long seconds(Duration d) {
    long ms = Math.max(1, d.toMillis());
    return (ms + 999) / 1000;
  }

  private static JsonNode pair(JsonNode key, Element e) {
    return F.arrayNode().add(key).add(e.value().orElseThrow().deepCopy());
  }

  private static ObjectNode elements(String verb, String family, String table, String set, Collection<Element> of,
      boolean keyOnly) {
    ArrayNode elems = F.arrayNode();
    of.forEach(e -> elems.add(element(e, keyOnly)));
    ObjectNode body = F.objectNode().put("family", family).put("table", table).put("name", set);
    body.set("elem", elems);
    return command(verb, "element", body);
  }

  private static Map<JsonNode, Element> byKey(List<Element> elements) {
    Map<JsonNode, Element> out = new HashMap<>(elements.size() * 4 / 3 + 1);
    elements.forEach(e -> out.put(e.key(), e));
    return out;
  }

  private static ObjectNode tableRef(NftTable t) {
    return F.objectNode().put("family", t.family()).put("name", t.name());
  }

  private static ObjectNode ref(NftTable t) {
    return F.objectNode().put("family", t.family()).put("table", t.name());
  }

  private static ObjectNode command(String verb, String object, ObjectNode body) {
    ObjectNode cmd = F.objectNode();
    cmd.putObject(verb).set(object, body);
    return cmd;
  }

  private static ObjectNode document(ArrayNode cmds) {
    ObjectNode doc = F.objectNode();
    doc.set("nftables", cmds);
    return doc;
  }
}

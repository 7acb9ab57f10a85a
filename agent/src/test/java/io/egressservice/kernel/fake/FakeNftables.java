package io.egressservice.kernel.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import io.egressservice.kernel.NftException;
import io.egressservice.kernel.Nftables;
import io.egressservice.kernel.fake.NftRuleset.Element;
import io.egressservice.kernel.fake.NftRuleset.NftSet;
import io.egressservice.kernel.fake.NftRuleset.Table;
import io.egressservice.netlink.NftCounters;
import io.egressservice.netlink.SetElement;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collector;

/**
 * The nftables of one fake namespace: a {@link NftRuleset} changed only by whole transactions ({@link #run}: every
 * command of a document goes through on a copy, or none does and nft's error is thrown), the generation moved by
 * each that wrote, listings in the shape nft 1.0.6 prints, set elements as the kernel holds them ({@link
 * SetElement}: an interval as a start and an end element).
 *
 * <p>Speaks libnftables JSON only: {@link #runScript} takes nothing but {@code add table} and {@code delete table}
 * lines (the "remove if present" idiom); any other script is refused with {@link UnsupportedOperationException}.
 * Shared by every context opened on the fake kernel: {@link #close()} frees nothing.
 */
public final class FakeNftables implements Nftables {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  private static final Pattern TABLE_LINE = Pattern.compile("(add|delete) table (inet|ip|ip6|arp|bridge|netdev) "
      + "([A-Za-z0-9_.-]+)");

  private final String where;
  private NftRuleset ruleset = new NftRuleset();
  private long generation = 1;
  private volatile boolean scriptsRefusedAsNftErrors;

  FakeNftables(String where) {
    this.where = where;
  }

  @Override
  public String describe() {
    return where;
  }

  /** The ruleset generation: moved by each transaction that committed a change (as the kernel's). */
  public synchronized long generation() {
    return generation;
  }

  @Override
  public synchronized JsonNode run(JsonNode commands) {
    NftRuleset copy = ruleset.copy();
    NftTransaction tx = new NftTransaction(copy);
    try {
      tx.run(commands);
    } catch (NftTransaction.Refused e) {
      throw new NftException("nft failed in " + where + " (" + commands.path("nftables").size() + " commands): "
          + e.getMessage(), e.getMessage(), null);
    }
    if (tx.wrote()) {
      ruleset = copy;
      generation = (generation + 1) & 0xffffffffL;
    }
    return NftTransaction.document(tx.output());
  }

  /**
   * Only {@code add table F N} / {@code delete table F N} lines, run as their JSON twins in one transaction: the
   * fake speaks libnftables JSON only, and parsing nft's own syntax is no fake's job.
   */
  @Override
  public JsonNode runScript(String script) {
    ArrayNode cmds = F.arrayNode();
    for (String line : script.split("\n")) {
      if (line.isBlank()) {
        continue;
      }
      Matcher m = TABLE_LINE.matcher(line.strip());
      if (!m.matches()) {
        String why = "the fake speaks libnftables JSON only (runScript takes 'add table' and 'delete table' lines,"
            + " not: " + line.strip() + ")";
        if (scriptsRefusedAsNftErrors) {
          throw new NftException("nft failed in " + where + ": " + why, why, null);
        }
        throw new UnsupportedOperationException(why);
      }
      cmds.addObject().putObject(m.group(1)).putObject("table").put("family", m.group(2)).put("name", m.group(3));
    }
    return run(NftTransaction.document(cmds));
  }

  /**
   * From now on a script the fake cannot read is refused as nft refuses a transaction ({@link NftException}), not
   * with {@link UnsupportedOperationException}: for a test of a whole reconcile of which a table still written in
   * nft's syntax is not part.
   */
  public void refuseScriptsAsNftErrors() {
    scriptsRefusedAsNftErrors = true;
  }

  @Override
  public Optional<JsonNode> listTableIfPresent(String family, String name) {
    return listing(family, name, true);
  }

  @Override
  public Optional<JsonNode> tableDefinitionsIfPresent(String family, String name) {
    return listing(family, name, false);
  }

  private synchronized Optional<JsonNode> listing(String family, String name, boolean elements) {
    Table t = ruleset.tables.get(NftRuleset.key(family, name));
    if (t == null) {
      return Optional.empty();
    }
    ArrayNode items = NftRuleset.listStart();
    NftRuleset.listTable(t, items, elements);
    return Optional.of(NftTransaction.document(items));
  }

  /** {@code nft -j list ruleset}: every table, elements included. */
  public synchronized JsonNode listRuleset() {
    return NftTransaction.document(ruleset.listRuleset(true));
  }

  @Override
  public <R> Optional<R> setElements(String family, String table, String set, Collector<SetElement, ?, R> collector) {
    List<SetElement> out;
    synchronized (this) {
      Table t = ruleset.tables.get(NftRuleset.key(family, table));
      NftSet s = t == null ? null : t.sets.get(set);
      if (s == null) {
        return Optional.empty();
      }
      out = kernelElements(s);
    }
    return Optional.of(out.stream().collect(collector));
  }

  /** As the kernel holds them: an interval as its start element and, unless it runs to the top, an end element. */
  private static List<SetElement> kernelElements(NftSet s) {
    List<SetElement> out = new ArrayList<>();
    for (Element e : s.elements.values()) {
      Optional<byte[]> data = Optional.empty();
      Optional<SetElement.Verdict> verdict = Optional.empty();
      if (e.value().isPresent()) {
        JsonNode v = e.value().get();
        if (s.dataType.orElseThrow().equals("verdict")) {
          verdict = Optional.of(verdict(v));
        } else {
          data = NftTypes.key(s.dataType.get(), v.asText());
        }
      }
      out.add(new SetElement(e.first(), Optional.empty(), data, verdict, 0, e.comment()));
      if (s.interval()) {
        NftTypes.next(e.last()).ifPresent(end -> out.add(new SetElement(end, Optional.empty(), Optional.empty(),
            Optional.empty(), SetElement.INTERVAL_END, Optional.empty())));
      }
    }
    return out;
  }

  private static SetElement.Verdict verdict(JsonNode v) {
    if (v.has("jump")) {
      return new SetElement.Verdict(SetElement.Verdict.JUMP, Optional.of(v.get("jump").path("target").asText()));
    }
    if (v.has("goto")) {
      return new SetElement.Verdict(SetElement.Verdict.GOTO, Optional.of(v.get("goto").path("target").asText()));
    }
    int code = v.has("accept") ? SetElement.Verdict.ACCEPT : v.has("drop") ? SetElement.Verdict.DROP
        : v.has("return") ? SetElement.Verdict.RETURN : SetElement.Verdict.CONTINUE;
    return new SetElement.Verdict(code, Optional.empty());
  }

  @Override
  public synchronized Optional<List<NftCounters.Counter>> countersIfPresent(String family, String table) {
    Table t = ruleset.tables.get(NftRuleset.key(family, table));
    if (t == null) {
      return Optional.empty();
    }
    return Optional.of(t.counters.values().stream()
        .map(c -> new NftCounters.Counter(c.name(), 0, 0, c.comment())).toList());
  }

  @Override
  public synchronized boolean tablePresent(String family, String table) {
    return ruleset.tables.containsKey(NftRuleset.key(family, table));
  }

  /** A context of the real kernel's would be freed; the fake's ruleset outlives every context. */
  @Override
  public void close() {}
}

package io.egressservice.nft.table;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * One nftables table as data: its named counters, sets (and maps) with their elements, and chains with their rules,
 * each rule a list of libnftables-json expressions ({@link Expr}). Listed in the order they are created, which is
 * the order {@code nft list table} prints them in. Immutable; built by name with the {@code with} methods.
 * {@link TableWriter} turns it into one transaction.
 */
public record NftTable(String family, String name, List<Counter> counters, List<NftSet> sets, List<Chain> chains) {
  public NftTable {
    Objects.requireNonNull(family);
    Objects.requireNonNull(name);
    counters = List.copyOf(counters);
    sets = List.copyOf(sets);
    chains = List.copyOf(chains);
  }

  /** An empty table. */
  public static NftTable of(String family, String name) {
    return new NftTable(family, name, List.of(), List.of(), List.of());
  }

  public NftTable withCounter(String counter, String comment) {
    return new NftTable(family, name, append(counters, new Counter(counter, comment)), sets, chains);
  }

  public NftTable withSet(NftSet set) {
    return new NftTable(family, name, counters, append(sets, set), chains);
  }

  public NftTable withChain(Chain chain) {
    return new NftTable(family, name, counters, sets, append(chains, chain));
  }

  /** The set (or map) of that name. */
  public Optional<NftSet> set(String set) {
    return sets.stream().filter(s -> s.name().equals(set)).findFirst();
  }

  /** The table without the elements of the sets {@code byElement}: two tables of one shape differ only there. */
  public NftTable shape(Set<String> byElement) {
    return new NftTable(family, name, counters,
        sets.stream().map(s -> byElement.contains(s.name()) ? s.withElements(List.of()) : s).toList(), chains);
  }

  /** The same table with these elements added to and removed from its sets (by key). */
  public NftTable withChanges(Collection<SetChange> changes) {
    List<NftSet> out = new ArrayList<>();
    for (NftSet s : sets) {
      List<SetChange> of = changes.stream().filter(c -> c.set().equals(s.name())).toList();
      if (of.isEmpty()) {
        out.add(s);
        continue;
      }
      Map<JsonNode, Element> byKey = new LinkedHashMap<>();
      s.elements().forEach(e -> byKey.put(e.key(), e));
      of.forEach(c -> {
        c.removed().forEach(e -> byKey.remove(e.key()));
        c.added().forEach(e -> byKey.put(e.key(), e));
      });
      out.add(s.withElements(byKey.values()));
    }
    return new NftTable(family, name, counters, out, chains);
  }

  /** The elements one set gains and loses. */
  public record SetChange(String set, Collection<Element> added, Collection<Element> removed) {
    public SetChange {
      Objects.requireNonNull(set);
      added = List.copyOf(added);
      removed = List.copyOf(removed);
    }

    public boolean isEmpty() {
      return added.isEmpty() && removed.isEmpty();
    }
  }

  private static <T> List<T> append(List<T> list, T item) {
    List<T> out = new ArrayList<>(list);
    out.add(item);
    return out;
  }

  /** A named counter. */
  public record Counter(String name, String comment) {
    public Counter {
      Objects.requireNonNull(name);
      Objects.requireNonNull(comment);
    }
  }

  /**
   * A named set, or a map when {@code mapType} is present.
   *
   * @param type the key's data type, or the data types of a concatenated key
   * @param flags {@code interval}, {@code timeout}, ...
   */
  public record NftSet(String name, List<String> type, Optional<String> mapType, Set<String> flags,
      List<Element> elements) {
    public NftSet {
      Objects.requireNonNull(name);
      type = List.copyOf(type);
      if (type.isEmpty()) {
        throw new IllegalArgumentException("set " + name + " has no key type");
      }
      Objects.requireNonNull(mapType);
      flags = Set.copyOf(new TreeSet<>(flags));
      elements = List.copyOf(elements);
    }

    /** A set of elements of one data type, without flags or elements. */
    public static NftSet of(String name, String type) {
      return new NftSet(name, List.of(type), Optional.empty(), Set.of(), List.of());
    }

    public NftSet withFlags(String... more) {
      Set<String> all = new TreeSet<>(flags);
      all.addAll(List.of(more));
      return new NftSet(name, type, mapType, all, elements);
    }

    public NftSet withElements(Collection<Element> all) {
      return new NftSet(name, type, mapType, flags, List.copyOf(all));
    }
  }

  /**
   * An element: its key ({@code "10.0.0.1"}, a prefix, a range, a concatenation as libnftables-json writes them),
   * the value of a map's element, its timeout and comment.
   */
  public record Element(JsonNode key, Optional<JsonNode> value, Optional<Duration> timeout, Optional<String> comment) {
    public Element {
      key = key.deepCopy();
      value = value.map(JsonNode::deepCopy);
      Objects.requireNonNull(timeout);
      Objects.requireNonNull(comment);
    }

    /** An element whose key is written as text (an address, an interface name). */
    public static Element of(String key) {
      return of(JsonNodeFactory.instance.textNode(key));
    }

    public static Element of(JsonNode key) {
      return new Element(key, Optional.empty(), Optional.empty(), Optional.empty());
    }

    /** The element expires {@code after} it is added (nftables' element timeouts, Linux 4.1). */
    public Element withTimeout(Duration after) {
      return new Element(key, value, Optional.of(after), comment);
    }

    public Element withComment(String text) {
      return new Element(key, value, timeout, Optional.of(text));
    }

    public Element withValue(JsonNode data) {
      return new Element(key, Optional.of(data), timeout, comment);
    }
  }

  /**
   * A chain; a base chain when {@code hook} is present.
   *
   * @param rules each rule's statements as libnftables-json expressions, in order
   */
  public record Chain(String name, Optional<Hook> hook, List<JsonNode> rules) {
    public Chain {
      Objects.requireNonNull(name);
      Objects.requireNonNull(hook);
      rules = rules.stream().map(r -> {
        if (!r.isArray()) {
          throw new IllegalArgumentException("a rule of chain " + name + " is not a list of statements: " + r);
        }
        return (JsonNode) r.deepCopy();
      }).toList();
    }

    /** A base chain on {@code hook} at {@code priority} (policy accept), without rules. */
    public static Chain base(String name, String type, String hook, int priority) {
      return new Chain(name, Optional.of(new Hook(type, hook, priority, "accept")), List.of());
    }

    public Chain withRule(JsonNode statements) {
      List<JsonNode> all = new ArrayList<>(rules);
      all.add(statements);
      return new Chain(name, hook, all);
    }
  }

  /** Where a base chain hangs: its type ({@code filter}, {@code nat}, {@code route}), hook, priority, policy. */
  public record Hook(String type, String hook, int priority, String policy) {
    public Hook {
      Objects.requireNonNull(type);
      Objects.requireNonNull(hook);
      Objects.requireNonNull(policy);
    }
  }
}

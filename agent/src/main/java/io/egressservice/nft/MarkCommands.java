package io.egressservice.nft;

import static io.egressservice.nft.MarkNftables.MANGLE_PRIORITY;
import static io.egressservice.nft.MarkNftables.OUTPUT;
import static io.egressservice.nft.MarkNftables.PREROUTING;
import static io.egressservice.nft.MarkNftables.REPLY;
import static io.egressservice.nft.MarkNftables.REPLY_IFACES;
import static io.egressservice.nft.MarkNftables.REPLY_PRIORITY;
import static io.egressservice.nft.MarkNftables.chainOf;
import static io.egressservice.nft.MarkNftables.mapOf;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.MarkNftables.MarkPlan;
import io.egressservice.nft.MarkNftables.MarkState;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * The difference between mark objects as listed and as planned, as libnftables-json commands in an order the
 * kernel accepts, and the rules those objects hold. Pure: it neither lists nor runs anything, so the diff is
 * tested without a namespace.
 */
final class MarkCommands {
  private static final String TABLE = EgressNftables.TABLE;
  private static final String FAMILY = EgressNftables.FAMILY;
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private MarkCommands() {}

  /**
   * The commands that take {@code observed} to {@code desired}, in a valid order (chains before the
   * elements that jump to them; elements gone before their chains are deleted); an empty array when
   * nothing differs.
   */
  static ArrayNode commands(MarkState observed, MarkPlan desired) {
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
        for (String map : new TreeSet<>(observed.maps())) { // sorted: the same state gives the same commands
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

  /**
   * The mark objects as they are once every command of {@link #commands} for the same arguments has committed: what
   * the planner decides from must be the same for this state as for a listing of the table then, so a cache may keep
   * it instead of listing. A network chain left intact keeps the mask it was read with (nft folds the mark's own bits
   * out of it); a rewritten one holds {@code desired.mask()}, which {@link #commands} takes as intact too. Pure.
   */
  static MarkState expectedAfter(MarkState observed, MarkPlan desired) {
    if (!desired.wanted()) {
      return new MarkState(observed.tablePresent(), Set.of(), Map.of(), Map.of(), Map.of(), Map.of(), Optional.empty());
    }
    Map<Long, Long> masks = new TreeMap<>();
    for (Map.Entry<Long, Long> net : desired.networkMarks().entrySet()) {
      long readMask = observed.networkChainMasks().getOrDefault(net.getKey(), -1L);
      boolean intact = net.getValue().equals(observed.networkChains().get(net.getKey()))
          && (readMask == desired.mask() || (readMask | net.getValue()) == desired.mask());
      masks.put(net.getKey(), intact ? readMask : desired.mask());
    }
    Map<String, Boolean> hooks = new HashMap<>();
    hooks.put(PREROUTING, true);
    hooks.put(OUTPUT, true);
    if (!desired.replyIfaces().isEmpty()) {
      hooks.put(REPLY, true);
    }
    Map<IpPrefix, MarkElement> elements = new HashMap<>(desired.elements().size() * 4 / 3 + 1);
    desired.elements().forEach(e -> elements.put(e.source(), e));
    return new MarkState(true, Set.of(mapOf(IpFamily.V4), mapOf(IpFamily.V6)), hooks,
        new TreeMap<>(desired.networkMarks()), masks, elements,
        desired.replyIfaces().isEmpty() ? Optional.empty() : Optional.of(desired.replyIfaces()));
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

  static ObjectNode cmd(String verb, String object, ObjectNode body) {
    ObjectNode inner = F.objectNode();
    inner.set(object, body);
    return F.objectNode().set(verb, inner);
  }
}

package io.egressservice.nft;

import static io.egressservice.nft.EgressNftables.CHAIN;
import static io.egressservice.nft.EgressNftables.CHAIN_PRIORITY;
import static io.egressservice.nft.EgressNftables.FAMILY;
import static io.egressservice.nft.EgressNftables.STEERING_DEVICE;
import static io.egressservice.nft.EgressNftables.TABLE;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.nft.EgressListing.ObjectStatus;
import io.egressservice.nft.EgressListing.Observed;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;

/**
 * The SNAT table's fixed shape (the maps, sets, chain and six rules drawn in {@link EgressNftables}) as
 * libnftables-json: the names, the specification a listing is compared with, and the commands that (re)create
 * whatever of it is missing or wrong. Nothing here changes with the services; the elements do.
 */
final class EgressTableLayout {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;

  private EgressTableLayout() {}

  /** {@code snat_v4} / {@code snat_v6}. */
  static String snatMap(IpFamily family) {
    return family == IpFamily.V4 ? "snat_v4" : "snat_v6";
  }

  /** {@code in_cluster_v4} / {@code in_cluster_v6}. */
  static String inClusterSet(IpFamily family) {
    return family == IpFamily.V4 ? "in_cluster_v4" : "in_cluster_v6";
  }

  static String nftType(IpFamily family) {
    return family == IpFamily.V4 ? "ipv4_addr" : "ipv6_addr";
  }

  /**
   * Appends what (re)creates the base: the table when absent; a chain whose rules differ is flushed and
   * refilled, a wrong chain, map or set deleted and re-added. Names the maps and sets it re-creates in
   * {@code recreated}: their old elements are gone after the transaction.
   */
  static void ensureBase(Observed obs, ArrayNode cmds, Set<String> recreated) {
    if (!obs.tablePresent()) {
      cmds.add(command("add", "table", F.objectNode().put("family", FAMILY).put("name", TABLE)));
    }
    boolean anyWrongObject = obs.objects().values().stream().anyMatch(s -> s == ObjectStatus.WRONG);
    boolean chainPresent = obs.chain() != ObjectStatus.ABSENT;
    boolean refillRules = obs.chain() != ObjectStatus.OK || anyWrongObject;
    // Rules reference the maps and sets: they go first so that wrong ones can be deleted.
    if (chainPresent && refillRules) {
      cmds.add(command("flush", "chain", chainRef()));
    }
    if (obs.chain() == ObjectStatus.WRONG) {
      cmds.add(command("delete", "chain", chainRef()));
    }
    for (IpFamily f : IpFamily.values()) {
      for (String name : List.of(snatMap(f), inClusterSet(f))) {
        ObjectStatus s = obs.objects().get(name);
        if (s == ObjectStatus.WRONG) {
          // delete by name works for sets and maps alike ("delete set").
          cmds.add(command("delete", "set", setRef(name)));
        }
        if (s != ObjectStatus.OK) {
          recreated.add(name);
          cmds.add(name.startsWith("snat") ? mapSpec(f) : setSpec(f));
        }
      }
    }
    if (obs.chain() == ObjectStatus.ABSENT || obs.chain() == ObjectStatus.WRONG) {
      cmds.add(command("add", "chain", chainRef()
          .put("type", "nat")
          .put("hook", "postrouting")
          .put("prio", CHAIN_PRIORITY)
          .put("policy", "accept")));
    }
    if (refillRules) {
      for (JsonNode expr : expectedRuleExpressions()) {
        ObjectNode rule = chainRef();
        rule.remove("name");
        rule.put("chain", CHAIN);
        rule.set("expr", expr.deepCopy());
        cmds.add(command("add", "rule", rule));
      }
    }
  }

  private static ObjectNode mapSpec(IpFamily f) {
    return command("add", "map", setRef(snatMap(f)).put("type", nftType(f)).put("map", nftType(f)));
  }

  private static ObjectNode setSpec(IpFamily f) {
    ObjectNode set = setRef(inClusterSet(f)).put("type", nftType(f));
    set.putArray("flags").add("interval");
    return command("add", "set", set);
  }

  /**
   * The six rules as libnftables-json expressions, in order; also what nft 1.0.6 prints for them,
   * so observed rules are compared to exactly this.
   */
  static List<JsonNode> expectedRuleExpressions() {
    List<JsonNode> rules = new ArrayList<>();
    // Steered packets (out of the steering device) keep their pod source: an identity SNAT sets the
    // connection's NAT binding here, so no later NAT chain (the CNI's masquerade at srcnat) runs for it.
    for (IpFamily f : IpFamily.values()) {
      ArrayNode expr = F.arrayNode();
      ObjectNode match = expr.addObject().putObject("match");
      match.put("op", "==");
      match.putObject("left").putObject("meta").put("key", "oifname");
      match.put("right", STEERING_DEVICE);
      ObjectNode snat = expr.addObject().putObject("snat");
      snat.put("family", f.nftName());
      snat.putObject("addr").putObject("payload").put("protocol", f.nftName()).put("field", "saddr");
      rules.add(expr);
    }
    for (IpFamily f : IpFamily.values()) {
      ArrayNode expr = F.arrayNode();
      ObjectNode match = expr.addObject().putObject("match");
      match.put("op", "==");
      match.putObject("left").putObject("payload").put("protocol", f.nftName()).put("field", "daddr");
      match.put("right", "@" + inClusterSet(f));
      expr.addObject().putNull("return");
      rules.add(expr);
    }
    for (IpFamily f : IpFamily.values()) {
      ArrayNode expr = F.arrayNode();
      ObjectNode snat = expr.addObject().putObject("snat");
      snat.put("family", f.nftName());
      ObjectNode map = snat.putObject("addr").putObject("map");
      map.putObject("key").putObject("payload").put("protocol", f.nftName()).put("field", "saddr");
      map.put("data", "@" + snatMap(f));
      rules.add(expr);
    }
    return rules;
  }

  /** {@code {"<verb>": {"<object>": body}}}. */
  static ObjectNode command(String verb, String object, ObjectNode body) {
    ObjectNode cmd = F.objectNode();
    cmd.putObject(verb).set(object, body);
    return cmd;
  }

  /** A map or set of the owned table, by name. */
  static ObjectNode setRef(String name) {
    return F.objectNode().put("family", FAMILY).put("table", TABLE).put("name", name);
  }

  private static ObjectNode chainRef() {
    return F.objectNode().put("family", FAMILY).put("table", TABLE).put("name", CHAIN);
  }
}

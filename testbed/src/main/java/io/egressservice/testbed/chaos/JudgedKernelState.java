package io.egressservice.testbed.chaos;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.Planner;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.SnatEntry;
import io.egressservice.testbed.ApiServer;
import io.egressservice.testbed.Namespace;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.ovn.k8s.v1.EgressService;

/**
 * A node's kernel state as the invariants judge it, read with nft and iproute2 (not through the agent), and the
 * plan it should equal, made by the agent's own {@link Planner} from what the API server holds now.
 *
 * <p>What is compared is the SNAT map (endpoint to LB IP, both families): the part whose loss or excess changes a
 * packet's source. Rules and steering routes depend on facts only the running agent resolves (tables of networks,
 * marks it already uses), so they are not compared to the plan; they are counted for the "nothing left" check.
 */
final class JudgedKernelState {
  static final String TABLE = "egress_service_agent";
  static final int RULE_PROTOCOL = PlanConfig.DEFAULT_RULE_PROTOCOL;
  static final String STEERING_DEVICE = "egress-vx";

  private JudgedKernelState() {}

  /** The SNAT elements of the node's kernel: {@code endpoint -> lbIp}, sorted. Empty without our table. */
  static Set<String> snat(Namespace node) {
    Set<String> out = new TreeSet<>();
    for (String map : List.of("snat_v4", "snat_v6")) {
      var r = node.tryExec("nft", "-j", "list", "map", "inet", TABLE, map);
      if (r.exitCode() != 0) {
        continue; // no table yet (or it was deleted by a drift)
      }
      JsonNode root;
      try {
        root = new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.stdout());
      } catch (java.io.IOException e) {
        throw new IllegalStateException("not JSON from nft: " + r.stdout(), e);
      }
      for (JsonNode item : root.path("nftables")) {
        for (JsonNode e : item.path("map").path("elem")) {
          out.add(text(e.get(0)) + " -> " + text(e.get(1)));
        }
      }
    }
    return out;
  }

  private static String text(JsonNode n) {
    if (n == null) {
      return "?";
    }
    if (n.isTextual()) {
      return n.asText();
    }
    JsonNode val = n.path("elem").path("val");
    return val.isMissingNode() ? n.toString() : val.asText();
  }

  /** What the planner wants in the SNAT maps of {@code node} for the API server's objects now. */
  static Set<String> plannedSnat(ApiServer api, String node, RuleMode mode) {
    KubernetesClient c = api.client();
    ClusterObjects objects = new ClusterObjects(
        c.resources(EgressService.class).inAnyNamespace().list().getItems(),
        c.services().inAnyNamespace().list().getItems(),
        c.discovery().v1().endpointSlices().inAnyNamespace().list().getItems(),
        c.nodes().list().getItems());
    PlanConfig config = PlanConfig.defaults().withRuleMode(mode, PlanConfig.DEFAULT_MARK_MASK);
    DesiredState state = Planner.plan(PlanInputs.of(node, objects, List.of(), NetworkResolution.offlineResolution(),
        config));
    Set<String> out = new TreeSet<>();
    for (SnatEntry e : state.snat()) {
      out.add(e.source().addressText() + " -> " + e.to().addressText());
    }
    return out;
  }

  /**
   * What of ours is on the node: rules of our protocol, elements of our maps and sets but the in-cluster and node
   * address sets (not per service), and the steering device. Empty when nothing is left.
   */
  static List<String> leftovers(Namespace node) {
    List<String> out = new ArrayList<>();
    for (String fam : List.of("-4", "-6")) {
      for (JsonNode rule : node.json("ip", "-j", fam, "rule", "show")) {
        String proto = rule.path("protocol").asText("");
        if (proto.equals(Integer.toString(RULE_PROTOCOL))) {
          out.add("rule " + rule);
        }
      }
    }
    if (node.tryExec("nft", "list", "table", "inet", TABLE).exitCode() == 0) {
      for (JsonNode item : node.json("nft", "-j", "list", "table", "inet", TABLE).path("nftables")) {
        JsonNode m = item.has("map") ? item.path("map") : item.path("set");
        String name = m.path("name").asText("");
        if (!m.isMissingNode() && m.has("elem") && m.path("elem").size() > 0 && !name.startsWith("in_cluster")
            && !name.startsWith("nodes_") && !name.startsWith("node_addresses")) {
          out.add(name + " " + m.path("elem"));
        }
      }
    }
    if (node.tryExec("ip", "link", "show", STEERING_DEVICE).exitCode() == 0) {
      out.add("link " + STEERING_DEVICE);
    }
    return out;
  }

  /**
   * Flushes what a reboot takes with it of ours, read from the kernel, not from the agent: every nft table whose name
   * starts with ours, the rules and routes of our protocol (both families, every table), the steering device.
   */
  static void flushOwned(Namespace node) {
    for (String table : ownedTables(node)) {
      node.tryExec("nft", "delete", "table", "inet", table);
    }
    for (String fam : List.of("-4", "-6")) {
      node.tryExec("ip", fam, "rule", "flush", "protocol", Integer.toString(RULE_PROTOCOL));
      node.tryExec("ip", fam, "route", "flush", "table", "all", "proto", Integer.toString(RULE_PROTOCOL));
    }
    node.tryExec("ip", "link", "del", STEERING_DEVICE);
  }

  /** Our nft tables on the node (the SNAT table and its side tables). */
  private static List<String> ownedTables(Namespace node) {
    List<String> out = new ArrayList<>();
    var r = node.tryExec("nft", "list", "tables", "inet");
    for (String line : r.stdout().split("\n")) {
      String name = line.trim().replaceFirst("^table inet ", "");
      if (name.startsWith(TABLE)) {
        out.add(name);
      }
    }
    return out;
  }

  /** Everything of ours on the node as text, for the evidence of a violation: nft tables, rules, routes, links. */
  static String ownedState(Namespace node) {
    StringBuilder sb = new StringBuilder();
    for (String table : ownedTables(node)) {
      sb.append("# nft list table inet ").append(table).append('\n')
          .append(node.tryExec("nft", "list", "table", "inet", table).stdout()).append('\n');
    }
    for (String fam : List.of("-4", "-6")) {
      sb.append("# ip ").append(fam).append(" rule show\n").append(node.tryExec("ip", fam, "rule", "show").stdout())
          .append('\n');
      sb.append("# ip ").append(fam).append(" route show table all proto ").append(RULE_PROTOCOL).append('\n')
          .append(node.tryExec("ip", fam, "route", "show", "table", "all", "proto", Integer.toString(RULE_PROTOCOL))
              .stdout()).append('\n');
    }
    sb.append("# ip -d link show\n").append(node.tryExec("ip", "-d", "link", "show").stdout());
    return sb.toString();
  }
}

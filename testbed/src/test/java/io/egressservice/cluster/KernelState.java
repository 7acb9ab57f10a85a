package io.egressservice.cluster;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.testbed.Namespace;
import java.util.List;

/**
 * A node's routing and filtering state as iproute2 and nft print it, for "nothing left behind" checks: rules and
 * every table's routes of both families, links (name, kind, flags), permanent neighbours, every nft table but ours
 * (without counters) and the elements of our maps and sets (the in-cluster sets aside: they are not per service;
 * our table itself stays once created). Addresses the kernel learns on its own (dynamic neighbours, route caches) are left out.
 */
final class KernelState {
  static final String OURS = "egress_service_agent";

  private KernelState() {}

  static String of(Namespace ns) {
    StringBuilder sb = new StringBuilder();
    for (List<String> cmd : List.of(
        List.of("ip", "-4", "rule", "show"),
        List.of("ip", "-6", "rule", "show"),
        List.of("ip", "-4", "route", "show", "table", "all"),
        List.of("ip", "-6", "route", "show", "table", "all"),
        List.of("ip", "neigh", "show", "nud", "permanent"),
        List.of("ip", "-6", "neigh", "show", "nud", "permanent"))) {
      sb.append("$ ").append(String.join(" ", cmd)).append('\n');
      String out = ns.exec(cmd.toArray(String[]::new));
      sb.append(out);
    }
    sb.append("$ nft list ruleset (other tables than ours)\n");
    for (JsonNode table : ns.json("nft", "-j", "list", "tables").path("nftables")) {
      JsonNode t = table.path("table");
      if (t.isMissingNode() || (t.path("family").asText().equals("inet") && t.path("name").asText().equals(OURS))) {
        continue;
      }
      sb.append(ns.exec("nft", "list", "table", t.path("family").asText(), t.path("name").asText())
          .replaceAll("counter packets \\d+ bytes \\d+", "counter").replaceAll("packets \\d+ bytes \\d+", "packets"));
    }
    // Our table itself may stay (empty); what matters is that no per-service element is left in it.
    sb.append("$ nft -j list table inet " + OURS + " (maps with elements, but the in-cluster sets)\n");
    if (ns.tryExec("nft", "list", "table", "inet", OURS).exitCode() == 0) {
      for (JsonNode item : ns.json("nft", "-j", "list", "table", "inet", OURS).path("nftables")) {
        JsonNode m = item.has("map") ? item.path("map") : item.path("set");
        if (!m.isMissingNode() && m.has("elem") && !m.path("name").asText().startsWith("in_cluster")) {
          sb.append(m.path("name").asText()).append(' ').append(m.path("elem")).append('\n');
        }
      }
    }
    sb.append("$ ip -j -d link show (name, kind, flags)\n");
    for (JsonNode link : ns.json("ip", "-j", "-d", "link", "show")) {
      sb.append(link.path("ifname").asText()).append(' ').append(link.path("linkinfo").path("info_kind").asText("-"))
          .append(' ').append(link.path("flags")).append('\n');
    }
    return sb.toString();
  }
}

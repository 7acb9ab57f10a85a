package io.egressservice.kernel.fake;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.Routing;
import io.egressservice.netlink.Rule;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Canonical text of a kernel's state, the same for the same state whoever holds it: the rules in their order, the
 * routes and addresses sorted with devices by name (ifindexes differ between kernels), the links by name; an
 * nftables listing (libnftables-json, the fake's or real nft's) as its tables, sets, maps and chains sorted by name,
 * elements sorted, rules in their order, handles left out. Tests compare these strings.
 */
public final class KernelDump {
  private static final Pattern DEV = Pattern.compile("dev #(\\d+)");

  private KernelDump() {}

  /** Rules, routes, links and addresses of {@code routing}. */
  public static String routing(Routing routing) {
    Map<Integer, String> names = new HashMap<>();
    List<Link> links = routing.listLinks();
    links.forEach(l -> names.put(l.index(), l.name()));
    StringBuilder sb = new StringBuilder();
    for (IpFamily f : IpFamily.values()) {
      for (Rule r : routing.listRules(f)) {
        sb.append("rule ").append(f.nftName()).append(' ').append(r).append('\n');
      }
    }
    for (IpFamily f : IpFamily.values()) {
      routing.listAllRoutes(f).stream().map(r -> "route " + f.nftName() + " " + byName(r.toString(), names)).sorted()
          .forEach(l -> sb.append(l).append('\n'));
    }
    links.stream().map(KernelDump::link).sorted().forEach(l -> sb.append(l).append('\n'));
    routing.listAddresses().stream().map(a -> "address " + byName(a.toString(), names)).sorted()
        .forEach(l -> sb.append(l).append('\n'));
    return sb.toString();
  }

  private static String link(Link l) {
    return "link " + l.name() + l.kind().map(k -> " type " + k).orElse("")
        + l.vxlan().map(v -> (v.external() ? " external" : "") + (v.gpe() ? " gpe" : "") + " dstport " + v.port())
            .orElse("")
        + " mtu " + l.mtu() + (l.up() ? " up" : " down") + l.alias().map(a -> " alias " + a).orElse("");
  }

  private static String byName(String text, Map<Integer, String> names) {
    Matcher m = DEV.matcher(text);
    StringBuilder sb = new StringBuilder();
    while (m.find()) {
      m.appendReplacement(sb, Matcher.quoteReplacement("dev "
          + names.getOrDefault(Integer.parseInt(m.group(1)), "#" + m.group(1))));
    }
    return m.appendTail(sb).toString();
  }

  /** An {@code nft -j list ruleset} / {@code list table} document as canonical text. */
  public static String nftables(JsonNode listing) {
    Map<String, TreeMap<String, List<String>>> tables = new TreeMap<>();
    Map<String, List<String>> rulesByChain = new HashMap<>();
    for (JsonNode item : listing.path("nftables")) {
      if (!item.properties().iterator().hasNext()) {
        continue;
      }
      Map.Entry<String, JsonNode> only = item.properties().iterator().next();
      if (only.getKey().equals("metainfo")) {
        continue;
      }
      JsonNode o = only.getValue();
      String table = o.path("family").asText() + " " + (only.getKey().equals("table") ? o.path("name").asText()
          : o.path("table").asText());
      TreeMap<String, List<String>> objects = tables.computeIfAbsent(table, k -> new TreeMap<>());
      switch (only.getKey()) {
        case "set", "map" -> {
          List<String> lines = new ArrayList<>();
          lines.add(only.getKey() + " " + o.path("name").asText() + " type " + o.path("type").asText()
              + (o.has("map") ? " : " + o.path("map").asText() : "")
              + (o.has("flags") ? " flags " + o.path("flags") : ""));
          List<String> elements = new ArrayList<>();
          o.path("elem").forEach(e -> elements.add("  elem " + e));
          elements.sort(null);
          lines.addAll(elements);
          objects.put(only.getKey() + " " + o.path("name").asText(), lines);
        }
        case "chain" -> {
          String key = table + " " + o.path("name").asText();
          List<String> lines = new ArrayList<>();
          lines.add("chain " + o.path("name").asText() + (o.has("hook") ? " type " + o.path("type").asText()
              + " hook " + o.path("hook").asText() + " prio " + o.path("prio").asText() + " policy "
              + o.path("policy").asText() : ""));
          rulesByChain.put(key, lines);
          objects.put("chain " + o.path("name").asText(), lines);
        }
        case "rule" -> rulesByChain.computeIfAbsent(table + " " + o.path("chain").asText(), k -> new ArrayList<>())
            .add("  rule " + o.path("expr") + Optional.ofNullable(o.get("comment")).map(c -> " comment " + c)
                .orElse(""));
        case "counter" -> objects.put("counter " + o.path("name").asText(), List.of("counter " + o.path("name")
            .asText() + Optional.ofNullable(o.get("comment")).map(c -> " comment " + c).orElse("")));
        default -> {
          // the table itself: its name is the heading
        }
      }
    }
    StringBuilder sb = new StringBuilder();
    tables.forEach((table, objects) -> {
      sb.append("table ").append(table).append('\n');
      objects.values().forEach(lines -> lines.forEach(l -> sb.append("  ").append(l).append('\n')));
    });
    return sb.toString();
  }
}

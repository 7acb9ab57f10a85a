package io.egressservice.explain;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.kernel.Nftables;
import io.egressservice.nft.NoHostNftables;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The sources the no-host table holds (their packets out of the cluster dropped while their service has no host),
 * per service, with the service's drop counter: what {@code status} shows of each held service.
 *
 * @param service the counter's comment: the service's name, or its {@code ServiceComments} form when that is long
 */
public record HeldSources(String service, List<String> sources, long droppedPackets) {
  public HeldSources {
    sources = List.copyOf(sources);
  }

  /** Every service the no-host table holds sources of, by its counter's comment; empty without the table. */
  public static List<HeldSources> read(Nftables nft) {
    JsonNode table = nft.listTableIfPresent("inet", NoHostNftables.TABLE).orElse(null);
    if (table == null) {
      return List.of();
    }
    // sets s<N>_v4/_v6 hold a service's sources; counter s<N> carries the service's name as its comment
    Map<String, List<String>> sourcesById = new TreeMap<>();
    Map<String, JsonNode> counters = new TreeMap<>();
    for (JsonNode item : table.path("nftables")) {
      JsonNode set = item.path("set");
      if (set.isObject() && set.path("name").asText().matches("s\\d+_v[46]")) {
        List<String> sources = sourcesById.computeIfAbsent(set.path("name").asText().replaceAll("_v[46]$", ""),
            k -> new ArrayList<>());
        for (JsonNode e : set.path("elem")) {
          JsonNode value = e.isObject() && e.has("elem") ? e.path("elem").path("val") : e;
          if (value.isTextual()) {
            sources.add(value.asText());
          }
        }
      }
      JsonNode counter = item.path("counter");
      if (counter.isObject()) {
        counters.put(counter.path("name").asText(), counter);
      }
    }
    List<HeldSources> out = new ArrayList<>();
    sourcesById.forEach((id, sources) -> {
      JsonNode counter = counters.get(id);
      if (!sources.isEmpty()) {
        out.add(new HeldSources(counter == null ? id : counter.path("comment").asText(id), sources,
            counter == null ? 0 : counter.path("packets").asLong()));
      }
    });
    out.sort(java.util.Comparator.comparing(HeldSources::service));
    return List.copyOf(out);
  }
}

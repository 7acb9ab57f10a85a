package io.egressservice.explain;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.GuardNftables;
import io.egressservice.kernel.Nftables;
import io.egressservice.nft.NoHostNftables;
import java.util.Optional;

/** What the no-host and guard tables say about one source, read from {@code nft -j list table}. */
record NftFacts(Optional<String> heldBy, long heldDrops, boolean guarded, long guardDrops) {
  static final NftFacts NONE = new NftFacts(Optional.empty(), 0, false, 0);

  static NftFacts read(Nftables nft, IpPrefix source) {
    Optional<String> heldBy = Optional.empty();
    long heldDrops = 0;
    JsonNode noHost = nft.listTableIfPresent("inet", NoHostNftables.TABLE).orElse(null);
    if (noHost != null) {
      // sets s<N>_v4/_v6 hold a service's sources; counter s<N> carries the service's name as its comment
      for (JsonNode item : noHost.path("nftables")) {
        JsonNode set = item.path("set");
        if (set.isObject() && set.path("name").asText().matches("s\\d+_v[46]") && contains(set, source)) {
          String id = set.path("name").asText().replaceAll("_v[46]$", "");
          for (JsonNode c : noHost.path("nftables")) {
            JsonNode counter = c.path("counter");
            if (counter.isObject() && counter.path("name").asText().equals(id)) {
              heldBy = Optional.of(counter.path("comment").asText(id));
              heldDrops = counter.path("packets").asLong();
            }
          }
        }
      }
    }
    boolean guarded = false;
    long guardDrops = 0;
    JsonNode guard = nft.listTableIfPresent("inet", GuardNftables.TABLE).orElse(null);
    if (guard != null) {
      for (JsonNode item : guard.path("nftables")) {
        JsonNode set = item.path("set");
        if (set.isObject() && set.path("name").asText().startsWith("ours_") && contains(set, source)) {
          guarded = true;
        }
        JsonNode counter = item.path("counter");
        if (counter.isObject() && counter.path("name").asText().equals(GuardNftables.SPOOFED)) {
          guardDrops = counter.path("packets").asLong();
        }
      }
    }
    return new NftFacts(heldBy, heldDrops, guarded, guardDrops);
  }

  /** Plain address elements only: these sets hold single addresses. */
  private static boolean contains(JsonNode set, IpPrefix source) {
    for (JsonNode e : set.path("elem")) {
      JsonNode value = e.isObject() && e.has("elem") ? e.path("elem").path("val") : e;
      if (value.isTextual() && value.asText().equals(source.addressText())) {
        return true;
      }
    }
    return false;
  }
}

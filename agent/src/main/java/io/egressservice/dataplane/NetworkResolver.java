package io.egressservice.dataplane;

import io.egressservice.netlink.Link;
import io.egressservice.plan.NetworkResolution;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * Resolves {@code spec.network} names on a node, in the order of DESIGN.md section 1: a VRF device
 * (its IFLA_VRF_TABLE), then a name in rt_tables. Numbers are the plan's own business.
 */
public final class NetworkResolver {
  private NetworkResolver() {}

  public static NetworkResolution resolve(Collection<String> networks, List<Link> links, RtTables rtTables) {
    Map<String, Long> tables = new HashMap<>();
    Map<String, String> failures = new HashMap<>();
    for (String name : networks) {
      if (name.isEmpty() || io.egressservice.plan.NetworkNames.isTableNumber(name)) {
        continue;
      }
      Optional<Link> link = links.stream().filter(l -> l.name().equals(name)).findFirst();
      if (link.isPresent() && link.get().kind().filter("vrf"::equals).isPresent()) {
        if (link.get().vrfTable().isPresent()) {
          tables.put(name, Integer.toUnsignedLong(link.get().vrfTable().getAsInt()));
        } else {
          failures.put(name, "network '" + name + "' is a VRF device without a routing table");
        }
        continue;
      }
      OptionalLong id = rtTables.table(name);
      if (id.isPresent() && id.getAsLong() != 0) {
        tables.put(name, id.getAsLong());
        continue;
      }
      String device = link.map(l -> " (a device named " + name + " exists, but it is a "
          + l.kind().orElse("plain") + " link, not a VRF)").orElse("");
      failures.put(name, "network '" + name + "' not found on this node: not a table number, no VRF device of"
          + " that name" + device + ", and no such name in " + (rtTables.filesRead().isEmpty()
              ? "rt_tables (none found)" : rtTables.filesRead()));
    }
    return new NetworkResolution(tables, failures, false);
  }
}

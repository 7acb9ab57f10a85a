package io.egressservice.plan;

import io.egressservice.model.SteeringConfig;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;

/**
 * One steering table per host node, for one planning pass. A host keeps the table whose routes already
 * lead to its addresses (so a restart or another service changes nothing in the kernel); a new host
 * takes the lowest table no route uses yet, so a table another host still has is never reused in the
 * same pass.
 */
final class SteerTables {
  private final SteeringConfig config;
  private final Map<Long, Set<IpPrefix>> existing;
  private final Map<String, Long> byHost = new HashMap<>();
  private final Set<Long> taken = new HashSet<>();
  /** After a full plan: only hosts already given a table are answered (a new one needs the full plan's order). */
  private boolean frozen;
  private boolean missed;

  SteerTables(SteeringConfig config, Map<Long, Set<IpPrefix>> existing) {
    this.config = config;
    this.existing = new HashMap<>();
    existing.forEach((t, a) -> {
      if (config.isSteeringTable(t) && !a.isEmpty()) {
        this.existing.put(t, a);
      }
    });
  }

  /** The host's table, or empty when every table of the range is in use. */
  OptionalLong tableFor(String host, List<String> internalIps) {
    Long known = byHost.get(host);
    if (known != null) {
      return OptionalLong.of(known);
    }
    if (frozen) {
      missed = true;
      return OptionalLong.empty();
    }
    Set<IpPrefix> addresses = new HashSet<>();
    for (String raw : internalIps) {
      IpPrefix.tryParse(raw).filter(IpPrefix::isHost).ifPresent(addresses::add);
    }
    List<Long> candidates = new ArrayList<>(existing.keySet());
    candidates.sort(null);
    for (long t : candidates) {
      if (!taken.contains(t) && addresses.containsAll(existing.get(t))) {
        return claim(host, t);
      }
    }
    for (long t = config.firstTable(); t < config.firstTable() + SteeringConfig.TABLES; t++) {
      if (!taken.contains(t) && !existing.containsKey(t)) {
        return claim(host, t);
      }
    }
    return OptionalLong.empty();
  }

  /**
   * From now on a host without a table is not given one: which table a new host takes depends on the order in
   * which the whole plan asks, so an incremental plan that meets one must be redone in full ({@link #missed}).
   */
  void freeze() {
    frozen = true;
  }

  /** Whether a host without a table was asked for since the last call; resets. */
  boolean missed() {
    boolean m = missed;
    missed = false;
    return m;
  }

  private OptionalLong claim(String host, long table) {
    byHost.put(host, table);
    taken.add(table);
    return OptionalLong.of(table);
  }
}

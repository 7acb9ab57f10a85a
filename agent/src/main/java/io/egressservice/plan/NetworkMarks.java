package io.egressservice.plan;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.SortedSet;

/**
 * Mark mode ({@link RuleMode#MARK}): the networks' marks within {@code --mark-mask}, and a service's per-source
 * rules turned into mark entries plus one {@code fwmark} rule per network. Node-wide: the marks depend on every
 * service's tables, so they are handed out after every service's part is decided.
 */
final class NetworkMarks {
  private final PlanConfig config;
  /** Per table, the mark the kernel's rules already use for it. */
  private final Map<Long, Long> existingMarks;

  NetworkMarks(PlanConfig config, Map<Long, Long> existingMarks) {
    this.config = config;
    this.existingMarks = existingMarks;
  }

  /**
   * Mark mode: each network gets a mark. Marks the kernel already uses for a table are kept (stable across
   * restarts); new tables take the lowest free value; a table left without one (no free mark) is absent.
   */
  Map<Long, Long> allocateMarks(SortedSet<Long> tables) {
    Map<Long, Long> networkMarks = new HashMap<>();
    Set<Long> taken = new HashSet<>();
    for (long table : tables) {
      Long existing = existingMarks.get(table);
      if (existing != null && (existing & ~config.markMask()) == 0 && existing != 0 && taken.add(existing)) {
        networkMarks.put(table, existing);
      }
    }
    long next = 1;
    for (long table : tables) {
      if (networkMarks.containsKey(table)) {
        continue;
      }
      while (next <= config.maxMarkValue() && taken.contains(config.markOf(next))) {
        next++;
      }
      if (next > config.maxMarkValue()) {
        break;
      }
      taken.add(config.markOf(next));
      networkMarks.put(table, config.markOf(next));
    }
    return networkMarks;
  }

  /**
   * Mark mode: every per-source rule of the service becomes a mark entry (nftables marks the source's packets)
   * and its network's {@code fwmark <mark>/<mask> lookup <table>} rule, one per family and network for the
   * whole node (the oldest service's stands for all). The masquerade IP's rules stay rules.
   */
  ServicePlan withMarks(ServicePlan p, Map<Long, Long> networkMarks) {
    List<RuleSpec> out = new ArrayList<>();
    List<MarkEntry> marks = new ArrayList<>();
    Map<String, RuleSpec> perNetwork = new LinkedHashMap<>();
    ServiceOutcome outcome = p.sourceOutcome();
    for (RuleSpec r : p.sourceRules()) {
      if (r.sourcePort().isPresent()) {
        out.add(r); // a mark keyed by source address cannot hold the port
        continue;
      }
      long table = r.table().id().orElseThrow();
      Long mark = networkMarks.get(table);
      ObjectRef service = r.service().orElseThrow();
      if (mark == null) {
        outcome = new ServiceOutcome(service, false,
            "no free mark for table " + table + " in --mark-mask 0x" + Long.toHexString(config.markMask())
                + " (" + config.maxMarkValue() + " networks at most)", outcome.skippedEndpoints(),
            outcome.remoteEndpoints());
        continue;
      }
      marks.add(new MarkEntry(r.from().orElseThrow(), table, mark, service));
      perNetwork.putIfAbsent(r.family() + "/" + table, new RuleSpec(r.family(), config.priority(), Optional.empty(),
          Optional.empty(), r.table(), Optional.empty(), OptionalLong.of(mark)));
    }
    return p.marked(outcome, out, marks, perNetwork);
  }
}

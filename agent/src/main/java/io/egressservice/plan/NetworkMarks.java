package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * Mark mode ({@link RuleMode#MARK}): the networks' marks within {@code --mark-mask}, and a service's per-source
 * rules turned into mark entries plus one {@code fwmark} rule per network. Node-wide: the marks depend on every
 * service's tables, so they are handed out after every service's part is decided.
 *
 * <p>The mask holds few marks (63 by default) and anyone who may create an EgressService can ask for one, so they
 * are handed out all or nothing, oldest service first ({@link ServiceOrder}): a service gets a mark for every table
 * it needs on the node (its network's, the steering table of its host) or none, and then nothing at all on the node
 * (no rule, SNAT element or steering: {@link ServicePlan#refused}), never a part of it. Who gets marks is a function
 * of the services alone, whatever order they arrived in: a younger service never takes an older one's mark; an older
 * one that comes to need a mark (its Service got its LoadBalancer IP, its network changed) takes it from the
 * youngest. The age is the API server's creationTimestamp, which no tenant can choose; names only break ties within
 * one second. {@code --mark-networks-per-namespace} bounds what one namespace takes: a service whose network would
 * be one more than its namespace's share is refused, so one tenant cannot exhaust the mask alone.
 */
final class NetworkMarks {
  /** What a service needs marks for on the node: the tables of its per-source rules, in planning order. */
  record Need(ServiceOrder order, Set<Long> tables) {
    Need {
      tables = Set.copyOf(tables);
    }

    static Need of(ServicePlan p) {
      Set<Long> tables = new HashSet<>();
      for (RuleSpec r : p.sourceRules()) {
        if (r.sourcePort().isEmpty()) {
          tables.add(r.table().id().orElseThrow());
        }
      }
      return new Need(p.order(), tables);
    }
  }

  private static final String NOTHING_APPLIED = ": nothing is applied for it on this node (no rule, mark, SNAT or"
      + " steering); its endpoints leave as if they had not opted in";

  private final PlanConfig config;
  /** Per table, the mark the kernel's rules already use for it. */
  private final Map<Long, Long> existingMarks;

  NetworkMarks(PlanConfig config, Map<Long, Long> existingMarks) {
    this.config = config;
    this.existingMarks = existingMarks;
  }

  /**
   * Oldest first, each service all its tables' marks or none (then it is refused, with why); then the values: a
   * table keeps the mark the kernel already uses for it (stable across restarts), a new one takes the lowest value
   * no table holds in the kernel, and only when there is none the value of a table that lost its mark (so a
   * displaced network's sources are not sent to another network while the change is applied, unless the mask is
   * full).
   */
  MarkAllocation allocate(Iterable<Need> oldestFirst) {
    Set<Long> granted = new TreeSet<>();
    Map<String, Set<Long>> byNamespace = new HashMap<>();
    Map<ObjectRef, String> refused = new HashMap<>();
    int limit = config.markNetworksPerNamespace();
    for (Need need : oldestFirst) {
      if (need.tables().isEmpty()) {
        continue;
      }
      ObjectRef service = need.order().ref();
      Set<Long> fresh = new TreeSet<>(need.tables());
      fresh.removeAll(granted);
      Set<Long> ofNamespace = byNamespace.getOrDefault(service.namespace(), Set.of());
      Set<Long> networks = new TreeSet<>(need.tables());
      networks.removeIf(t -> config.steering().isSteeringTable(t) || ofNamespace.contains(t));
      if (limit > 0 && ofNamespace.size() + networks.size() > limit) {
        refused.put(service, namespaceLimitReason(service.namespace(), limit));
      } else if (granted.size() + fresh.size() > config.maxMarkValue()) {
        refused.put(service, noFreeMarkReason(fresh));
      } else {
        granted.addAll(fresh);
        byNamespace.computeIfAbsent(service.namespace(), n -> new HashSet<>()).addAll(networks);
      }
    }
    return new MarkAllocation(values(granted), refused);
  }

  private Map<Long, Long> values(Set<Long> granted) {
    Map<Long, Long> networkMarks = new HashMap<>();
    Set<Long> taken = new HashSet<>();
    for (long table : granted) {
      Long existing = existingMarks.get(table);
      if (existing != null && (existing & ~config.markMask()) == 0 && existing != 0 && taken.add(existing)) {
        networkMarks.put(table, existing);
      }
    }
    Set<Long> heldByOthers = new HashSet<>();
    existingMarks.forEach((table, mark) -> {
      if (!networkMarks.containsKey(table)) {
        heldByOthers.add(mark);
      }
    });
    List<Long> free = new ArrayList<>();
    List<Long> freedNow = new ArrayList<>();
    for (long n = 1; n <= config.maxMarkValue() && free.size() < granted.size(); n++) {
      long mark = config.markOf(n);
      if (!taken.contains(mark)) {
        (heldByOthers.contains(mark) ? freedNow : free).add(mark);
      }
    }
    free.addAll(freedNow);
    int next = 0;
    for (long table : granted) {
      if (!networkMarks.containsKey(table)) {
        networkMarks.put(table, free.get(next++));
      }
    }
    return networkMarks;
  }

  private String noFreeMarkReason(Set<Long> tables) {
    return Planner.NO_FREE_MARK + "table " + tables.stream().map(String::valueOf).collect(Collectors.joining(", "))
        + " in --mark-mask 0x" + Long.toHexString(config.markMask()) + " (" + config.maxMarkValue()
        + " networks at most, each held by an older EgressService)" + NOTHING_APPLIED;
  }

  /** The namespace is a tenant-written string: this is the one place the limit's message carries it. */
  private static String namespaceLimitReason(String namespace, int limit) {
    return Planner.NO_FREE_MARK + "namespace " + namespace + ": it holds marks for " + limit + " networks on this"
        + " node, its limit (--mark-networks-per-namespace " + limit + "), all for its older EgressServices"
        + NOTHING_APPLIED;
  }

  /**
   * Mark mode: the service's part with marks. A refused service gets nothing; otherwise every per-source rule
   * becomes a mark entry (nftables marks the source's packets) and its network's {@code fwmark <mark>/<mask> lookup
   * <table>} rule, one per family and network for the whole node (the oldest service's stands for all). The
   * masquerade IP's rules stay rules.
   */
  ServicePlan withMarks(ServicePlan p, MarkAllocation allocation) {
    String refusal = allocation.refused().get(p.service());
    if (refusal != null) {
      return p.refused(refusal);
    }
    List<RuleSpec> out = new ArrayList<>();
    List<MarkEntry> marks = new ArrayList<>();
    Map<String, RuleSpec> perNetwork = new LinkedHashMap<>();
    for (RuleSpec r : p.sourceRules()) {
      if (r.sourcePort().isPresent()) {
        out.add(r); // a mark keyed by source address cannot hold the port
        continue;
      }
      long table = r.table().id().orElseThrow();
      Long mark = allocation.networkMarks().get(table);
      if (mark == null) {
        // Not reached (a service not refused got every mark it needs); if it were, still all or nothing.
        return p.refused(noFreeMarkReason(Set.of(table)));
      }
      marks.add(new MarkEntry(r.from().orElseThrow(), table, mark, r.service().orElseThrow()));
      perNetwork.putIfAbsent(r.family() + "/" + table, new RuleSpec(r.family(), config.priority(), Optional.empty(),
          Optional.empty(), r.table(), Optional.empty(), OptionalLong.of(mark)));
    }
    return p.marked(p.sourceOutcome(), out, marks, perNetwork);
  }
}

package io.egressservice.allocator;

import java.util.Collection;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which nodes the allocator probes. Pure. The hosts (their failure moves services), the unreachable nodes (to see
 * them return), and up to {@code candidates} other nodes that could host (Ready, schedulable, not being deleted), by
 * name so the choice is stable: a service moves to a node whose health is already known, and the judgment "most
 * nodes fail at once" ({@link HostHealth}) has a population even when there is one host.
 */
final class ProbeTargets {
  private ProbeTargets() {}

  static Set<String> select(Collection<String> hosts, Collection<String> unreachable, List<NodeState> nodes,
      int candidates) {
    Set<String> wanted = new TreeSet<>(unreachable);
    wanted.addAll(hosts);
    int left = candidates;
    for (NodeState n : nodes.stream().sorted(Comparator.comparing(NodeState::name)).toList()) {
      if (left == 0) {
        break;
      }
      if (n.ready() && !n.unschedulable() && !n.deleting() && wanted.add(n.name())) {
        left--;
      }
    }
    return java.util.Collections.unmodifiableSet(wanted);
  }
}

package io.egressservice.allocator;

import io.egressservice.plan.EgressServiceInfo;
import java.util.Map;
import java.util.Optional;

/**
 * Whether a new {@code status.host} moves a service from one node to another (a failover), and why the old
 * host no longer qualified, in the order {@link HostChooser} tests a node. Pure. A first host, a move to or
 * from {@code ALL}, and losing every host are not moves.
 */
final class HostMoves {
  private HostMoves() {}

  /** The metric reason of the move from {@code es.statusHost()} to {@code newHost}, if it is one. */
  static Optional<String> reason(EgressServiceState es, String newHost, Map<String, NodeState> nodes) {
    String old = es.statusHost();
    if (!isNode(old) || !isNode(newHost) || old.equals(newHost)) {
      return Optional.empty();
    }
    NodeState n = nodes.get(old);
    if (n == null) {
      return Optional.of("node_gone");
    }
    if (n.deleting()) {
      return Optional.of("node_deleting");
    }
    if (!n.ready()) {
      return Optional.of("node_not_ready");
    }
    if (n.agentUnreachable()) {
      return Optional.of("agent_unreachable");
    }
    if (n.unschedulable()) {
      return Optional.of("node_cordoned");
    }
    try {
      if (!NodeSelectors.compile(es.nodeSelector().orElse(null)).test(n.labels())) {
        return Optional.of("node_selector");
      }
    } catch (NodeSelectors.InvalidSelectorException e) {
      return Optional.of("node_selector");
    }
    // The current host is kept while it is a candidate: what is left is that its endpoints are gone.
    return Optional.of("no_endpoints");
  }

  private static boolean isNode(String host) {
    return !host.isEmpty() && !EgressServiceInfo.HOST_ALL.equals(host);
  }
}

package io.egressservice.allocator;

import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * What the allocator needs of a Node.
 *
 * @param labels {@code metadata.labels}; a key whose value is null counts as absent
 * @param ready the {@code Ready} condition is {@code True}
 * @param unschedulable {@code spec.unschedulable} (cordoned)
 * @param deleting {@code metadata.deletionTimestamp} is set
 * @param addresses {@code status.addresses} of type InternalIP and ExternalIP, raw text
 * @param podCidrs {@code spec.podCIDRs} (else {@code spec.podCIDR}), raw text
 * @param agentUnreachable the allocator's probes of the node's agent say the node is gone (drained)
 */
public record NodeState(
    String name,
    Map<String, String> labels,
    boolean ready,
    boolean unschedulable,
    boolean deleting,
    List<String> addresses,
    List<String> podCidrs,
    boolean agentUnreachable) {
  /** A node whose agent is not known to be unreachable. */
  public NodeState(String name, Map<String, String> labels, boolean ready, boolean unschedulable, boolean deleting,
      List<String> addresses, List<String> podCidrs) {
    this(name, labels, ready, unschedulable, deleting, addresses, podCidrs, false);
  }

  public NodeState withAgentUnreachable(boolean unreachable) {
    return new NodeState(name, labels, ready, unschedulable, deleting, addresses, podCidrs, unreachable);
  }

  public NodeState {
    Map<String, String> copy = new HashMap<>();
    if (labels != null) {
      labels.forEach((k, v) -> {
        if (v != null) {
          copy.put(k, v);
        }
      });
    }
    labels = Map.copyOf(copy);
    addresses = List.copyOf(addresses);
    podCidrs = List.copyOf(podCidrs);
  }
}

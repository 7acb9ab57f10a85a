package io.egressservice.health;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * Whose health a probe port reports: the node the agent serves and, in a pod, the pod's UID. Every answer of the
 * port carries it as headers ({@link #NODE_HEADER}, {@link #POD_UID_HEADER}); the status code and body mean what
 * they meant before, so kubelet's probes are unchanged. The allocator compares the node with the node it probed: a
 * port answered by another process (one that took the port first) or by another node's agent does not speak for
 * this node.
 *
 * <p>Not an authentication: any process on the node can send these headers. It tells a squatter's or a
 * misrouted answer from the agent's, not an attacker's.
 */
public record ProbeIdentity(String node, Optional<String> podUid) {
  /** The node name the answering agent serves. */
  public static final String NODE_HEADER = "Egress-Agent-Node";
  /** The answering agent's pod UID (absent outside a pod). */
  public static final String POD_UID_HEADER = "Egress-Agent-Pod-UID";

  public ProbeIdentity {
    Objects.requireNonNull(podUid);
    if (node == null || node.isBlank() || !printable(node) || podUid.filter(u -> u.isBlank() || !printable(u)).isPresent()) {
      throw new IllegalArgumentException("a probe identity needs a node name and an optional pod UID of printable "
          + "ASCII, not '" + node + "', " + podUid);
    }
  }

  /** The headers every answer of the port carries. */
  public Map<String, String> headers() {
    Map<String, String> h = new LinkedHashMap<>();
    h.put(NODE_HEADER, node);
    podUid.ifPresent(u -> h.put(POD_UID_HEADER, u));
    return Map.copyOf(h);
  }

  /** Header values go onto the wire as they are: no line breaks or control characters may split the head. */
  private static boolean printable(String s) {
    return s.chars().allMatch(c -> c > 0x20 && c < 0x7f);
  }
}

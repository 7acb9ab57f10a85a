package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.time.Instant;
import java.util.Optional;

/**
 * What the plan needs of an EgressService.
 *
 * @param created {@code metadata.creationTimestamp}; empty (e.g. in hand-written files) sorts last
 * @param network {@code spec.network}, "" when unset
 * @param statusHost {@code status.host}: a node name, {@code ALL}, or "" when not allocated
 * @param malformed why the object's spec could not be read (it fails the CRD's schema), when it could not:
 *     such a service is refused on its own, and nothing is applied for it
 * @param alsoReceive the {@value #ALSO_RECEIVE_ANNOTATION} annotation, "" when none: during a planned host move,
 *     the nodes (comma-separated) that receive and SNAT the service's steered endpoints besides the host, while
 *     their own endpoints keep following {@code status.host} (so a host move makes before it breaks)
 */
public record EgressServiceInfo(
    ObjectRef ref, Optional<Instant> created, SourceIpBy sourceIpBy, String network, String statusHost,
    Optional<String> malformed, String alsoReceive) {
  /**
   * Written by the allocator only: the nodes (comma-separated) that, besides {@code status.host}, receive the
   * service's steered endpoints during a planned move: the old host and the new one, from before the new one is
   * ready until the steering nodes have switched to it.
   */
  public static final String ALSO_RECEIVE_ANNOTATION = "egress-service.k8s.ovn.org/also-receive";

  /** The value of {@code status.host} for {@code sourceIPBy: Network}: every node acts for its local endpoints. */
  public static final String HOST_ALL = "ALL";

  public EgressServiceInfo {
    network = network == null ? "" : network.trim();
    statusHost = statusHost == null ? "" : statusHost;
    alsoReceive = alsoReceive == null ? "" : alsoReceive.trim();
  }

  /** Whether {@code node} is among the nodes of {@link #alsoReceive}. */
  public boolean alsoReceives(String node) {
    if (alsoReceive.isEmpty() || node.isEmpty()) {
      return false;
    }
    for (String n : alsoReceive.split(",")) {
      if (n.trim().equals(node)) {
        return true;
      }
    }
    return false;
  }

  /** Without a node that also receives. */
  public EgressServiceInfo(ObjectRef ref, Optional<Instant> created, SourceIpBy sourceIpBy, String network,
      String statusHost, Optional<String> malformed) {
    this(ref, created, sourceIpBy, network, statusHost, malformed, "");
  }

  /** A well-formed EgressService. */
  public EgressServiceInfo(ObjectRef ref, Optional<Instant> created, SourceIpBy sourceIpBy, String network,
      String statusHost) {
    this(ref, created, sourceIpBy, network, statusHost, Optional.empty());
  }
}

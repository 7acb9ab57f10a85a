package io.egressservice.plan;

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
 */
public record EgressServiceInfo(
    ObjectRef ref, Optional<Instant> created, SourceIpBy sourceIpBy, String network, String statusHost,
    Optional<String> malformed) {
  /** The value of {@code status.host} for {@code sourceIPBy: Network}: every node acts for its local endpoints. */
  public static final String HOST_ALL = "ALL";

  public EgressServiceInfo {
    network = network == null ? "" : network.trim();
    statusHost = statusHost == null ? "" : statusHost;
  }

  /** A well-formed EgressService. */
  public EgressServiceInfo(ObjectRef ref, Optional<Instant> created, SourceIpBy sourceIpBy, String network,
      String statusHost) {
    this(ref, created, sourceIpBy, network, statusHost, Optional.empty());
  }
}

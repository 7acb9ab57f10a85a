package io.egressservice.plan;

import java.time.Instant;
import java.util.Optional;

/**
 * What the plan needs of an EgressService.
 *
 * @param created {@code metadata.creationTimestamp}; empty (e.g. in hand-written files) sorts last
 * @param network {@code spec.network}, "" when unset
 * @param statusHost {@code status.host}: a node name, {@code ALL}, or "" when not allocated
 */
public record EgressServiceInfo(
    ObjectRef ref, Optional<Instant> created, SourceIpBy sourceIpBy, String network, String statusHost) {
  /** The value of {@code status.host} for {@code sourceIPBy: Network}: every node acts for its local endpoints. */
  public static final String HOST_ALL = "ALL";

  public EgressServiceInfo {
    network = network == null ? "" : network.trim();
    statusHost = statusHost == null ? "" : statusHost;
  }
}

package io.egressservice.allocator;

import io.egressservice.model.ObjectRef;
import io.egressservice.plan.SourceIpBy;
import io.fabric8.kubernetes.api.model.LabelSelector;
import java.time.Instant;
import java.util.Optional;

/**
 * What the allocator needs of an EgressService.
 *
 * @param nodeSelector {@code spec.nodeSelector}; empty when absent (then every node matches)
 * @param statusHost {@code status.host}: "" when unset or when there is no status at all
 * @param hasStatus whether {@code status} exists (an object without status gets {@code host: ""} written)
 * @param malformed why the spec could not be read (the object fails the CRD's schema); such a service gets no host
 * @param network {@code spec.network}, "" when unset (the grants and the network's spelling are checked)
 * @param created {@code metadata.creationTimestamp}: of two services with one host label, the older keeps it
 */
public record EgressServiceState(
    ObjectRef ref, SourceIpBy sourceIpBy, Optional<LabelSelector> nodeSelector, String statusHost, boolean hasStatus,
    Optional<String> malformed, String network, Optional<Instant> created) {
  public EgressServiceState {
    statusHost = statusHost == null ? "" : statusHost;
    network = network == null ? "" : network.trim();
  }

  /** Without a network, of unknown age. */
  public EgressServiceState(ObjectRef ref, SourceIpBy sourceIpBy, Optional<LabelSelector> nodeSelector,
      String statusHost, boolean hasStatus, Optional<String> malformed) {
    this(ref, sourceIpBy, nodeSelector, statusHost, hasStatus, malformed, "", Optional.empty());
  }

  /** A well-formed EgressService. */
  public EgressServiceState(ObjectRef ref, SourceIpBy sourceIpBy, Optional<LabelSelector> nodeSelector,
      String statusHost, boolean hasStatus) {
    this(ref, sourceIpBy, nodeSelector, statusHost, hasStatus, Optional.empty());
  }
}

package io.egressservice.allocator;

import io.egressservice.plan.ObjectRef;
import io.egressservice.plan.SourceIpBy;
import io.fabric8.kubernetes.api.model.LabelSelector;
import java.util.Optional;

/**
 * What the allocator needs of an EgressService.
 *
 * @param nodeSelector {@code spec.nodeSelector}; empty when absent (then every node matches)
 * @param statusHost {@code status.host}: "" when unset or when there is no status at all
 * @param hasStatus whether {@code status} exists (an object without status gets {@code host: ""} written)
 * @param malformed why the spec could not be read (the object fails the CRD's schema); such a service gets no host
 */
public record EgressServiceState(
    ObjectRef ref, SourceIpBy sourceIpBy, Optional<LabelSelector> nodeSelector, String statusHost, boolean hasStatus,
    Optional<String> malformed) {
  public EgressServiceState {
    statusHost = statusHost == null ? "" : statusHost;
  }

  /** A well-formed EgressService. */
  public EgressServiceState(ObjectRef ref, SourceIpBy sourceIpBy, Optional<LabelSelector> nodeSelector,
      String statusHost, boolean hasStatus) {
    this(ref, sourceIpBy, nodeSelector, statusHost, hasStatus, Optional.empty());
  }
}

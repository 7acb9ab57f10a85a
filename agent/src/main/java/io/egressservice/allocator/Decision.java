package io.egressservice.allocator;

import io.egressservice.model.ObjectRef;
import java.util.Optional;

/**
 * The allocator's verdict for one EgressService.
 *
 * @param host desired {@code status.host}: {@code ALL}, a node name, or ""
 * @param message human-readable detail (Event message)
 * @param labelKey the node label to put on {@code host}; empty when there is no node host or the key is invalid
 * @param labelProblem why the label cannot be set although a node host was chosen
 */
public record Decision(
    ObjectRef ref, String host, Reason reason, String message, Optional<String> labelKey, Optional<String> labelProblem) {

  static Decision unallocated(ObjectRef ref, Reason reason, String message) {
    return new Decision(ref, "", reason, message, Optional.empty(), Optional.empty());
  }
}

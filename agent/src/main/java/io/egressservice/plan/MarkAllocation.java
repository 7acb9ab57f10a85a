package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.util.Map;

/**
 * Mark mode: what {@link NetworkMarks#allocate} handed out on a node, oldest service first.
 *
 * @param networkMarks each table that got a mark, to its mark
 * @param refused each service that did not get every mark it needs, to why: it gets nothing on the node
 */
record MarkAllocation(Map<Long, Long> networkMarks, Map<ObjectRef, String> refused) {
  static final MarkAllocation NONE = new MarkAllocation(Map.of(), Map.of());

  MarkAllocation {
    networkMarks = Map.copyOf(networkMarks);
    refused = Map.copyOf(refused);
  }
}

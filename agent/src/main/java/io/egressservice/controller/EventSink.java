package io.egressservice.controller;

import io.egressservice.model.ObjectRef;
import java.time.Instant;
import java.util.List;

/**
 * Where the agent reports outcomes to users: Kubernetes Events on the EgressService. Only {@link #emit}
 * is required; a sink that can also name what it wrote, repeat it and list it back ({@link
 * KubernetesEvents}) lets repeats be folded into one Event and restarts continue where the last run
 * left off.
 */
public interface EventSink {
  /**
   * Writes a new Event.
   *
   * @param type "Normal" or "Warning"
   * @param reason CamelCase, e.g. {@code EgressConfigured}
   */
  void emit(ObjectRef egressService, String type, String reason, String message);

  /** Writes a new Event and says which it is. */
  default Written create(EventRecord e) {
    emit(e.object(), e.type(), e.reason(), e.message());
    return new Written(e, "", 1, Instant.EPOCH);
  }

  /**
   * One more occurrence of an Event written before: its count becomes {@code count}, its last time now,
   * its message {@code e}'s. False when that Event is gone (expired); without a name, a new one is written.
   */
  default boolean repeat(Written earlier, EventRecord e, int count) {
    if (earlier.name().isEmpty()) {
      emit(e.object(), e.type(), e.reason(), e.message());
      return true;
    }
    return false;
  }

  /** The Events this node wrote that still exist (to go on from them after a restart); empty when unknown. */
  default List<Written> written() {
    return List.of();
  }

  /** An Event as the API holds it: what it says, its name (empty when unknown), count and last time. */
  record Written(EventRecord event, String name, int count, Instant last) {
    Written repeated(EventRecord now, int newCount, Instant at) {
      return new Written(now, name, newCount, at);
    }
  }
}

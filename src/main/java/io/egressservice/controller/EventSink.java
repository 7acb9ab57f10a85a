package io.egressservice.controller;

import io.egressservice.plan.ObjectRef;

/** Where the agent reports outcomes to users: Kubernetes Events on the EgressService. */
public interface EventSink {
  /**
   * @param type "Normal" or "Warning"
   * @param reason CamelCase, e.g. {@code EgressConfigured}
   */
  void emit(ObjectRef egressService, String type, String reason, String message);
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.time.Instant;

/**
 * The planning order of EgressServices: oldest first (an endpoint claimed by two belongs to the older one),
 * then by namespace/name; a service of unknown age sorts last.
 */
record ServiceOrder(Instant created, ObjectRef ref) implements Comparable<ServiceOrder> {
  static ServiceOrder of(EgressServiceInfo es) {
    return new ServiceOrder(es.created().orElse(Instant.MAX), es.ref());
  }

  @Override
  public int compareTo(ServiceOrder o) {
    int c = created.compareTo(o.created);
    return c != 0 ? c : ref.compareTo(o.ref);
  }
}

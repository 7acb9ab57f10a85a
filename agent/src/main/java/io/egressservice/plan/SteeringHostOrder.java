package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which table a steering host gets depends on the order in which the whole plan first asks for each host (its
 * oldest service that steers to it): per host, the services that asked a table for it, oldest first, and the hosts
 * in that order as of the last full plan. When the order of hosts changes, the tables are left to a full plan.
 */
final class SteeringHostOrder {
  private final Map<String, TreeSet<ServiceOrder>> requesters = new HashMap<>();
  private List<String> planned = List.of();

  /**
   * Takes in the re-planned parts ({@code next}, null: gone) in place of {@code plans}' ones; true when the order of
   * the hosts is no longer the one the last full plan gave tables in.
   */
  boolean movedBy(Map<ObjectRef, ServicePlan> next, Map<ObjectRef, ServicePlan> plans) {
    boolean touched = false;
    for (Map.Entry<ObjectRef, ServicePlan> e : next.entrySet()) {
      ServicePlan before = plans.get(e.getKey());
      ServicePlan after = e.getValue();
      Set<String> was = before == null ? Set.of() : before.steerHosts();
      Set<String> now = after == null ? Set.of() : after.steerHosts();
      if (was.isEmpty() && now.isEmpty()
          || before != null && after != null && was.equals(now) && before.order().equals(after.order())) {
        continue;
      }
      touched = true;
      if (before != null) {
        request(before, -1);
      }
      if (after != null) {
        request(after, 1);
      }
    }
    return touched && !sequence().equals(planned);
  }

  /** Adds (sign 1) or takes (-1) the requests of a service's part. */
  void request(ServicePlan p, int sign) {
    for (String host : p.steerHosts()) {
      if (sign > 0) {
        requesters.computeIfAbsent(host, h -> new TreeSet<>()).add(p.order());
      } else {
        TreeSet<ServiceOrder> who = requesters.get(host);
        if (who != null) {
          who.remove(p.order());
          if (who.isEmpty()) {
            requesters.remove(host);
          }
        }
      }
    }
  }

  /** A full plan gave the tables in the order of the requests made since {@link #clear}. */
  void settle() {
    planned = sequence();
  }

  void clear() {
    requesters.clear();
  }

  private List<String> sequence() {
    List<String> hosts = new ArrayList<>(requesters.keySet());
    hosts.sort((a, b) -> requesters.get(a).first().compareTo(requesters.get(b).first()));
    return hosts;
  }
}

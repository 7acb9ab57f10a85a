package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Per endpoint address, the services that try to own it, oldest first: the oldest owns it (as in the full plan,
 * which plans the services oldest first). Kept between incremental plans, so a re-planned service learns whether an
 * address is its own without planning the others, and whoever else names an address that changed hands is found.
 */
final class EndpointClaims {
  private final Map<IpPrefix, List<ServiceOrder>> claimants = new HashMap<>();

  /** {@link PlanContext.Claims}: null when {@code service} owns {@code address}, else the older owner. */
  ObjectRef olderOwner(IpPrefix address, ObjectRef service) {
    List<ServiceOrder> who = claimants.get(address);
    if (who == null || who.isEmpty() || who.get(0).ref().equals(service)) {
      return null;
    }
    return who.get(0).ref();
  }

  /** The services that try to own {@code address}, oldest first. */
  List<ServiceOrder> claimants(IpPrefix address) {
    return claimants.getOrDefault(address, List.of());
  }

  void claim(ServiceOrder order, List<IpPrefix> addresses) {
    for (IpPrefix a : addresses) {
      List<ServiceOrder> who = claimants.computeIfAbsent(a, k -> new ArrayList<>(1));
      int i = 0;
      while (i < who.size() && who.get(i).compareTo(order) < 0) {
        i++;
      }
      who.add(i, order);
    }
  }

  void unclaim(ServiceOrder order, List<IpPrefix> addresses) {
    for (IpPrefix a : addresses) {
      List<ServiceOrder> who = claimants.get(a);
      if (who != null) {
        who.remove(order);
        if (who.isEmpty()) {
          claimants.remove(a);
        }
      }
    }
  }

  void clear() {
    claimants.clear();
  }
}

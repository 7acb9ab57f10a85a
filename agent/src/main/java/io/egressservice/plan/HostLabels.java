package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;

/**
 * The node label of an EgressService's host, OVN-Kubernetes' {@code egress-service.k8s.ovn.org/<namespace>-<name>},
 * and who holds each: two services can map to one label ({@code team/a-web} and {@code team-a/web}), and then only
 * the older one (creationTimestamp, then namespace/name: {@link ServiceOrder}) may have it; the younger one is refused
 * everywhere, or the label would put one service's LoadBalancer IP on the other's host. Pure; one thread at a time.
 */
public final class HostLabels {
  /** Prefix of the host label, as in OVN-Kubernetes ({@code egressSVCLabelPrefix}). */
  public static final String PREFIX = "egress-service.k8s.ovn.org";

  private final Map<String, TreeSet<ServiceOrder>> holders = new HashMap<>();
  private final Map<ObjectRef, ServiceOrder> orderOf = new HashMap<>();

  /** The host label key of {@code service}, whether it is a valid label key or not. */
  public static String key(ObjectRef service) {
    return PREFIX + "/" + service.namespace() + "-" + service.name();
  }

  /** Holds every service of {@code services}. */
  public static HostLabels of(Iterable<EgressServiceInfo> services) {
    HostLabels labels = new HostLabels();
    services.forEach(labels::put);
    return labels;
  }

  /** Adds or updates a service; returns the others that share its label (their verdict may change). */
  public List<ObjectRef> put(EgressServiceInfo es) {
    return put(es.ref(), es.created());
  }

  /** As {@link #put(EgressServiceInfo)}, for callers without the plan's record. */
  public List<ObjectRef> put(ObjectRef ref, Optional<Instant> created) {
    ServiceOrder order = new ServiceOrder(created.orElse(Instant.MAX), ref);
    ServiceOrder before = orderOf.put(ref, order);
    TreeSet<ServiceOrder> set = holders.computeIfAbsent(key(ref), k -> new TreeSet<>());
    if (before != null) {
      set.remove(before);
    }
    set.add(order);
    return others(set, ref);
  }

  /** Removes a service; returns the others that shared its label. */
  public List<ObjectRef> remove(ObjectRef ref) {
    ServiceOrder before = orderOf.remove(ref);
    if (before == null) {
      return List.of();
    }
    String key = key(ref);
    TreeSet<ServiceOrder> set = holders.get(key);
    set.remove(before);
    if (set.isEmpty()) {
      holders.remove(key);
    }
    // Whoever shares the label now may hold it.
    return set.stream().map(ServiceOrder::ref).toList();
  }

  /** The oldest other service with the same label, when it is older than {@code ref}: then {@code ref} may not. */
  public Optional<ObjectRef> olderHolder(ObjectRef ref) {
    TreeSet<ServiceOrder> set = holders.get(key(ref));
    ServiceOrder mine = orderOf.get(ref);
    if (set == null || mine == null || set.first().equals(mine)) {
      return Optional.empty();
    }
    return Optional.of(set.first().ref());
  }

  /** Why {@code ref} may not have its host label (nor be configured), or empty when it is the label's holder. */
  public Optional<String> refusal(ObjectRef ref) {
    return olderHolder(ref).map(older -> REFUSED + "its host node label " + TenantText.quoted(key(ref))
        + " is also the label of EgressService " + TenantText.quoted(older.toString())
        + ", which is older and keeps it; rename one of them (the label joins namespace and name with '-')");
  }

  /** How every refusal for a shared label starts. */
  public static final String REFUSED = "ambiguous host label: ";

  private static List<ObjectRef> others(TreeSet<ServiceOrder> set, ObjectRef ref) {
    if (set.size() < 2) {
      return List.of();
    }
    List<ObjectRef> out = new ArrayList<>(set.size() - 1);
    for (ServiceOrder o : set) {
      if (!o.ref().equals(ref)) {
        out.add(o.ref());
      }
    }
    return out;
  }
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;

/**
 * The items of some services in a plan's list, and its items of no service. On the lists of an incremental plan
 * (views over every service's part) this reads only the parts of those services and the node-wide tail: a fast
 * path that diffs one changed service of 5,000 does not walk the 30,000 rules of the others.
 */
public final class ServiceParts {
  private ServiceParts() {}

  /**
   * @param ofServices the items whose service is one of {@code services}
   * @param ofNoService the node-wide items: on a plan's view, those of the tail and of the given services' parts
   *     (the only places a plan puts them); on any other list, all of them
   */
  public record Split<T>(List<T> ofServices, List<T> ofNoService) {
    public Split {
      ofServices = List.copyOf(ofServices);
      ofNoService = List.copyOf(ofNoService);
    }
  }

  public static <T> Split<T> split(List<T> list, Set<ObjectRef> services, Function<T, Optional<ObjectRef>> serviceOf) {
    List<T> of = new ArrayList<>();
    List<T> none = new ArrayList<>();
    if (list instanceof PlanSlots.PlanList<T> view) {
      keep(view.partsOf(services), services, serviceOf, of, none);
      keep(view.tail(), services, serviceOf, of, none);
    } else {
      keep(list, services, serviceOf, of, none);
    }
    return new Split<>(of, none);
  }

  /** {@link #split}'s items of {@code services}, for lists whose every item belongs to a service. */
  public static <T> List<T> of(List<T> list, Set<ObjectRef> services, Function<T, ObjectRef> serviceOf) {
    return split(list, services, t -> Optional.of(serviceOf.apply(t))).ofServices();
  }

  private static <T> void keep(List<T> items, Set<ObjectRef> services, Function<T, Optional<ObjectRef>> serviceOf,
      List<T> of, List<T> none) {
    for (T item : items) {
      Optional<ObjectRef> s = serviceOf.apply(item);
      if (s.isEmpty()) {
        none.add(item);
      } else if (services.contains(s.get())) {
        of.add(item);
      }
    }
  }
}

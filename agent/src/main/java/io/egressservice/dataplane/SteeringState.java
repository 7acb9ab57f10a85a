package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.Route;
import io.egressservice.plan.SteeringPlan;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * What the agent owns for steering in one namespace: the device named {@link SteeringPlan#DEVICE}
 * (ours only when tagged with {@link SteeringPlan#DEVICE_ALIAS}), the IPv4 address on it, its
 * rp_filter, and the routes of the steering tables that carry our protocol and go over our device.
 *
 * @param device the device of that name, whoever made it
 * @param routes owned steering routes (none when the device is not ours)
 * @param addressPresent the device has {@link SteeringDataplane#DEVICE_ADDRESS}
 * @param rpFilter {@code net.ipv4.conf.<device>.rp_filter}, empty when it cannot be read
 */
public record SteeringState(Optional<Link> device, List<Route> routes, boolean addressPresent, OptionalInt rpFilter) {
  public SteeringState {
    routes = List.copyOf(routes);
  }

  public static SteeringState absent() {
    return new SteeringState(Optional.empty(), List.of(), false, OptionalInt.empty());
  }

  /** The device exists and carries our tag. */
  public boolean deviceOurs() {
    return device.flatMap(Link::alias).filter(SteeringPlan.DEVICE_ALIAS::equals).isPresent();
  }

  /** A device of our name that we did not create: never touched. */
  public boolean deviceForeign() {
    return device.isPresent() && !deviceOurs();
  }

  /** Steering table to the host addresses its routes lead to (the plan keeps a host on its table). */
  public Map<Long, Set<IpPrefix>> tables() {
    Map<Long, Set<IpPrefix>> out = new HashMap<>();
    for (Route r : routes) {
      r.encap().ifPresent(e -> out.computeIfAbsent(Integer.toUnsignedLong(r.table()), k -> new HashSet<>())
          .add(e.destination()));
    }
    return out;
  }
}

package io.egressservice.dataplane;

import io.egressservice.netlink.Route;
import io.egressservice.netlink.VxlanDevice;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The steering part of a change set. Applied in two halves around the rules: {@link #before} the rule
 * additions (the device and the routes the new rules need), {@link #after} the rule deletions (routes
 * no rule uses any more, then the device when nothing needs it), so a steered source never meets an
 * empty table.
 *
 * @param refusal why nothing is done: a device of our name exists that the agent did not create
 * @param deleteDeviceFirst our device is there but not as specified (kind, mode, port): removed, then re-created
 * @param create the device to create
 * @param setMtu the MTU our existing device should have
 * @param replacedRoutes routes whose table and family keep, with another destination: deleted before the adds
 * @param deleteDeviceLast nothing needs the device
 */
public record SteeringChanges(
    Optional<String> refusal,
    boolean deleteDeviceFirst,
    Optional<VxlanDevice> create,
    OptionalInt setMtu,
    boolean setUp,
    boolean addAddress,
    boolean setRpFilter,
    List<Route> replacedRoutes,
    List<Route> routeAdds,
    List<Route> routeDeletes,
    boolean deleteDeviceLast) {
  public SteeringChanges {
    replacedRoutes = List.copyOf(replacedRoutes);
    routeAdds = List.copyOf(routeAdds);
    routeDeletes = List.copyOf(routeDeletes);
  }

  public static SteeringChanges none() {
    return new SteeringChanges(Optional.empty(), false, Optional.empty(), OptionalInt.empty(), false, false, false,
        List.of(), List.of(), List.of(), false);
  }

  public boolean isEmpty() {
    return refusal.isEmpty() && !deleteDeviceFirst && create.isEmpty() && setMtu.isEmpty() && !setUp && !addAddress
        && !setRpFilter && replacedRoutes.isEmpty() && routeAdds.isEmpty() && routeDeletes.isEmpty() && !deleteDeviceLast;
  }
}

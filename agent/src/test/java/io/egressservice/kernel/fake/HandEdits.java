package io.egressservice.kernel.fake;

import io.egressservice.netlink.Address;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.VxlanDevice;
import java.util.Optional;

/**
 * Drift: changes made beside the agent as an administrator makes them with {@code ip}, each refused as that command
 * would be and announced to the subscriptions like any other change ({@link FakeRouting#byHand()}).
 */
public final class HandEdits {
  private final FakeRouting routing;

  HandEdits(FakeRouting routing) {
    this.routing = routing;
  }

  /** {@code ip rule add} (exclusive). */
  public void addRule(Rule rule) {
    synchronized (routing) {
      routing.addRule(rule, true);
    }
  }

  /** {@code ip rule del}. */
  public void deleteRule(Rule rule) {
    synchronized (routing) {
      routing.deleteRule(rule);
    }
  }

  /** {@code ip route add}. */
  public void addRoute(Route route) {
    synchronized (routing) {
      routing.addRoute(route);
    }
  }

  /** {@code ip route del}. */
  public void deleteRoute(Route route) {
    synchronized (routing) {
      routing.deleteRoute(route);
    }
  }

  /** {@code ip link add NAME type KIND mtu M [up]}: a device of another kind than VXLAN (veth, dummy ...). */
  public Link addLink(String name, String kind, int mtu, boolean up) {
    return routing.addLink(name, kind, mtu, up);
  }

  /** {@code ip link add NAME type vxlan external ...}. */
  public Link addVxlan(VxlanDevice device) {
    return routing.createVxlan(device);
  }

  /** {@code ip link set dev #INDEX [mtu M] [alias A] up|down}. */
  public void setLink(int index, int mtu, boolean up, Optional<String> alias) {
    routing.setLink(index, mtu, up, alias);
  }

  /** {@code ip link del}. */
  public void deleteLink(int index) {
    routing.deleteLink(index);
  }

  /** {@code ip addr add}. */
  public void addAddress(Address address) {
    routing.addAddress(address);
  }

  /** {@code sysctl net.ipv4.conf.DEVICE.SETTING=VALUE}, by IPV4_DEVCONF id. */
  public void setIpv4DeviceConf(int ifindex, int confId, int value) {
    routing.setIpv4DeviceConf(ifindex, confId, value);
  }

  /**
   * The kernel dropped notifications (ENOBUFS: a listener fell behind): each subscription's {@code onOverflow} runs
   * on its thread, after the events announced before, and its listener must list again.
   */
  public void loseNotifications() {
    routing.loseNotifications();
  }
}

package io.egressservice.netlink;

import java.nio.charset.StandardCharsets;
import java.util.Objects;

/**
 * A collect-metadata ({@code external}) VXLAN device to create, with learning off: each packet's
 * destination comes from its route's encapsulation ({@link RouteEncap}). {@code gpe}: VXLAN-GPE, an
 * L3 device (no inner Ethernet header, so no MAC addresses and no neighbours).
 */
public record VxlanDevice(String name, int port, boolean gpe, int mtu, String alias) {
  public VxlanDevice {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(alias, "alias");
    if (name.isEmpty() || name.getBytes(StandardCharsets.UTF_8).length >= NetlinkConstants.IFNAMSIZ
        || name.contains("/") || name.contains(" ")) {
      throw new IllegalArgumentException("'" + name + "' is not a valid device name (1 to 15 bytes, no '/' or space)");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("UDP port " + port + " is out of range 1..65535");
    }
    if (mtu < 0 || mtu > 65535) {
      throw new IllegalArgumentException("MTU " + mtu + " is out of range");
    }
  }
}

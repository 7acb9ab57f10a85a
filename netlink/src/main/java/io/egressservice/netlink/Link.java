package io.egressservice.netlink;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A network device as {@code ip -d link show} reports it, reduced to what the agent needs: ifindex,
 * name, {@code IFLA_INFO_KIND} (e.g. "veth", "vrf", "vxlan"; empty for devices without link info
 * such as {@code lo}), for a VRF its routing table ({@code IFLA_VRF_TABLE}), the alias
 * ({@code IFLA_IFALIAS}, how the agent tags the device it owns), MTU, whether it is up, and for a
 * VXLAN device the settings the agent checks.
 */
public record Link(int index, String name, Optional<String> kind, OptionalInt vrfTable, Optional<String> alias,
    int mtu, boolean up, Optional<Vxlan> vxlan) {
  public Link {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(vrfTable, "vrfTable");
    Objects.requireNonNull(alias, "alias");
    Objects.requireNonNull(vxlan, "vxlan");
  }

  /** A device known by index, name, kind and VRF table only (the rest unknown: no alias, MTU 0, down). */
  public Link(int index, String name, Optional<String> kind, OptionalInt vrfTable) {
    this(index, name, kind, vrfTable, Optional.empty(), 0, false, Optional.empty());
  }

  /**
   * What {@code ip -d link show} says after {@code vxlan}: the UDP port, {@code external} (collect
   * metadata), {@code gpe} (no inner Ethernet header) and whether it learns source addresses.
   */
  public record Vxlan(int port, boolean external, boolean gpe, boolean learning) {}

  @Override
  public String toString() {
    return index + ": " + name + kind.map(k -> " type " + k).orElse("")
        + (vrfTable.isPresent() ? " table " + Integer.toUnsignedString(vrfTable.getAsInt()) : "")
        + vxlan.map(v -> (v.external() ? " external" : "") + (v.gpe() ? " gpe" : "") + " dstport " + v.port()).orElse("")
        + alias.map(a -> " alias " + a).orElse("");
  }
}

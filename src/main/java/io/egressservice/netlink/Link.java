package io.egressservice.netlink;

import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * A network device as {@code ip -d link show} reports it, reduced to what policy routing needs:
 * ifindex, name, {@code IFLA_INFO_KIND} (e.g. "veth", "vrf"; empty for devices without link info
 * such as {@code lo}) and, for a VRF, its routing table ({@code IFLA_VRF_TABLE}).
 */
public record Link(int index, String name, Optional<String> kind, OptionalInt vrfTable) {
  public Link {
    Objects.requireNonNull(name, "name");
    Objects.requireNonNull(kind, "kind");
    Objects.requireNonNull(vrfTable, "vrfTable");
  }

  @Override
  public String toString() {
    return index + ": " + name + kind.map(k -> " type " + k).orElse("")
        + (vrfTable.isPresent() ? " table " + Integer.toUnsignedString(vrfTable.getAsInt()) : "");
  }
}

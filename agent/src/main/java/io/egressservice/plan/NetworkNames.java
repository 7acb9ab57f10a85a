package io.egressservice.plan;

import java.util.Map;
import java.util.Optional;

/**
 * What {@code spec.network} may name. The kernel's own tables are not egress networks: a rule into
 * {@code main} or {@code default} changes nothing while the service reports "routed", one into
 * {@code local} breaks the node's own delivery, and table 0 ({@code unspec}) is no table at all.
 */
public final class NetworkNames {
  /** The reserved ids of rt_tables(5), with the names iproute2 gives them. */
  private static final Map<Long, String> RESERVED = Map.of(0L, "unspec", 253L, "default", 254L, "main", 255L, "local");

  private NetworkNames() {}

  /**
   * A table number: ASCII digits only. {@code Character.isDigit} and {@code Long.parseLong} also take other
   * scripts' digits ({@code ٢٥٤} is 254), which no other tool reads as a number.
   */
  public static boolean isTableNumber(String network) {
    if (network.isEmpty()) {
      return false;
    }
    for (int i = 0; i < network.length(); i++) {
      char c = network.charAt(i);
      if (c < '0' || c > '9') {
        return false;
      }
    }
    return true;
  }

  /** "the kernel's 'main' table (254)" when {@code id} is reserved, else empty. */
  public static Optional<String> reservedTable(long id) {
    String name = RESERVED.get(id);
    return name == null ? Optional.empty() : Optional.of("the kernel's '" + name + "' table (" + id + ")");
  }

  /**
   * "the kernel's 'main' table (254)" when {@code network} is a reserved name (case-sensitive, as in rt_tables),
   * else empty. Checked before any lookup, so also in an offline plan.
   */
  public static Optional<String> reservedName(String network) {
    for (Map.Entry<Long, String> e : RESERVED.entrySet()) {
      if (e.getValue().equals(network)) {
        return reservedTable(e.getKey());
      }
    }
    return Optional.empty();
  }
}

package io.egressservice.model;

/**
 * How endpoints are steered to the host node: the mode, the routing tables the agent owns for it
 * (one per host node, {@code firstTable} to {@code firstTable + TABLES - 1}), the device's UDP port, and what
 * happens to the endpoints of a service without a host ({@link NoHost}).
 */
public record SteeringConfig(RemoteEndpoints mode, long firstTable, int port, NoHost noHost) {
  /** Tables 7000-7255 by default: clear of the ones CNIs and cloud agents are known to use (see README). */
  public static final long DEFAULT_FIRST_TABLE = 7000;
  /** One table per host node steered to; 256 hosts is far beyond any real egress layout. */
  public static final int TABLES = 256;
  /** Not VXLAN's 4789 (Calico, Flannel on Windows, NSX), not 8472 (Linux VXLAN default, Flannel, Cilium), not 6081 (Geneve). */
  public static final int DEFAULT_PORT = 4799;

  /** With {@code --no-host=drop}. */
  public SteeringConfig(RemoteEndpoints mode, long firstTable, int port) {
    this(mode, firstTable, port, NoHost.DROP);
  }

  public SteeringConfig {
    if (noHost == null) {
      throw new IllegalArgumentException("a --no-host mode is required");
    }
    if (mode == null) {
      throw new IllegalArgumentException("a steering mode is required");
    }
    if (firstTable < 1 || firstTable + TABLES - 1 > 0xFFFFFFFFL
        || (firstTable <= 255 && firstTable + TABLES - 1 >= 253)) {
      throw new IllegalArgumentException("--steer-table " + firstTable + ": the " + TABLES
          + " steering tables must be valid table ids that skip the kernel's 253-255 (e.g. 7000)");
    }
    if (port < 1 || port > 65535) {
      throw new IllegalArgumentException("--steer-port must be a UDP port (1-65535), not " + port);
    }
  }

  public static SteeringConfig defaults() {
    return new SteeringConfig(RemoteEndpoints.STEER, DEFAULT_FIRST_TABLE, DEFAULT_PORT);
  }

  public boolean steers() {
    return mode == RemoteEndpoints.STEER;
  }

  /** Whether {@code table} is one of the steering tables. */
  public boolean isSteeringTable(long table) {
    return table >= firstTable && table < firstTable + TABLES;
  }
}

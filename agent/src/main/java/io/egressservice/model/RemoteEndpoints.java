package io.egressservice.model;

/**
 * What a node that is not {@code status.host} does with the local endpoints of a LoadBalancerIP
 * service ({@code --remote-endpoints}).
 *
 * <ul>
 *   <li>{@link #STEER}: sends their egress to the host over the agent's device, so it leaves there
 *       with the LB IP (DESIGN.md section 6);
 *   <li>{@link #REPORT}: leaves them alone and reports them; for OVN-Kubernetes, whose overlay already
 *       reroutes them to the host.
 * </ul>
 */
public enum RemoteEndpoints {
  STEER("steer"),
  REPORT("report");

  private final String flag;

  RemoteEndpoints(String flag) {
    this.flag = flag;
  }

  public String flag() {
    return flag;
  }

  public static RemoteEndpoints fromFlag(String flag) {
    for (RemoteEndpoints m : values()) {
      if (m.flag.equals(flag)) {
        return m;
      }
    }
    throw new IllegalArgumentException("--remote-endpoints must be steer or report, not '" + flag + "'");
  }
}

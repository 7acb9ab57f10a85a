package io.egressservice.cluster;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Namespace;

/**
 * Loss on the allocator's path to every node, shared by {@link AllocatorPartitionClusterTest} and the benchmark: in
 * the lan namespace (where the allocator probes from), {@code percent} % of the packets sent from the control plane's
 * address to TCP 9464 are dropped ({@code numgen random}: nft 0.9.0 / Linux 4.9; there is no netem here). Closing
 * deletes the table; deleting the namespace (the cluster's close, also on JVM shutdown) does too.
 */
public final class ProbeLoss implements AutoCloseable {
  public static final String TABLE = "esa_test_probe_loss";

  private final Namespace lan;

  private ProbeLoss(Namespace lan) {
    this.lan = lan;
  }

  /** Starts dropping {@code percent} % of the allocator's probe packets sent in {@code lan}. */
  public static ProbeLoss start(Namespace lan, int percent) {
    lan.nft(rules(percent));
    return new ProbeLoss(lan);
  }

  /** Drops {@code percent} % of the packets the lan namespace sends from the control plane's address to TCP 9464. */
  public static String rules(int percent) {
    return "table inet " + TABLE + " {\n"
        + "  chain output {\n"
        + "    type filter hook output priority 0; policy accept;\n"
        + "    ip saddr " + Addresses.controlPlaneIp(IpFamily.V4) + " tcp dport 9464 numgen random mod 100 < "
        + percent + " drop\n"
        + "    ip6 saddr " + Addresses.controlPlaneIp(IpFamily.V6) + " tcp dport 9464 numgen random mod 100 < "
        + percent + " drop\n"
        + "  }\n"
        + "}\n";
  }

  @Override
  public void close() {
    lan.tryExec("nft", "delete", "table", "inet", TABLE);
  }
}

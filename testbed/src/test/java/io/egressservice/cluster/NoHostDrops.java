package io.egressservice.cluster;

import io.egressservice.testbed.Cluster;

/** Packets the no-host guard dropped, summed over the running agents (their metric). */
public final class NoHostDrops {
  private NoHostDrops() {}

  public static double total(Cluster c) {
    return c.nodes().stream().filter(n -> n.agent().running())
        .mapToDouble(n -> n.agent().metric("egress_service_agent_no_host_dropped_packets_total")).sum();
  }
}

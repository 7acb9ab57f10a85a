package io.egressservice.bench;

import io.egressservice.testbed.Cluster;
import java.util.List;

/**
 * UDP datagrams the external hosts' kernels dropped at a full socket buffer ({@code RcvbufErrors} of
 * {@code /proc/net/snmp} in the ext namespaces): a receiver starved on a loaded machine loses datagrams outside the
 * cluster's path, so losses are told apart from the agents'.
 */
final class ReceiverDrops {
  private ReceiverDrops() {}

  static long total(Cluster c) {
    long sum = 0;
    for (String role : List.of("ext-a1", "ext-b1", "ext-c1")) {
      List<String> udp = c.netns(role).tryExec("cat", "/proc/net/snmp").stdout().lines()
          .filter(l -> l.startsWith("Udp:")).toList();
      if (udp.size() < 2) {
        continue;
      }
      List<String> names = List.of(udp.get(0).trim().split("\\s+"));
      String[] values = udp.get(1).trim().split("\\s+");
      int k = names.indexOf("RcvbufErrors");
      if (k > 0 && k < values.length) {
        sum += Long.parseLong(values[k]);
      }
    }
    return sum;
  }
}

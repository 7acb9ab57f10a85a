package io.egressservice.datapath;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.datapath.NamespaceTopology.Probe;
import io.egressservice.datapath.NamespaceTopology.Seen;
import org.junit.jupiter.api.BeforeEach;

/** A datapath test class whose cases each run on a fresh {@link Topology} (one node, its pods, two uplinks). */
abstract class TopologyCase extends NamespaceCase<Topology> {
  @BeforeEach
  void buildTopology() {
    topo = Topology.create();
  }

  /**
   * The client connects to {@code lb}:80, {@code pod} accepts it from {@code client}, and the replies
   * cross {@code up} and not the other uplink (counted per family: see {@link Topology#replyPackets(String, String)}).
   */
  void expectInboundConnection(String lb, String pod, String client, String up, String family) {
    String other = up.equals("up1") ? "up2" : "up1";
    eventually(() -> {
      long viaUp = topo.replyPackets(up, family);
      long viaOther = topo.replyPackets(other, family);
      Probe p = topo.tcp("client", lb, Topology.LB_PORT);
      assertThat(p.seen()).as("who accepted the connection to %s", lb).containsExactly(new Seen(pod, "tcp", client));
      assertThat(p.reply()).contains("saw " + client + " at " + pod);
      assertThat(topo.replyPackets(up, family)).as("replies through " + up).isGreaterThan(viaUp);
      assertThat(topo.replyPackets(other, family)).as("replies through " + other).isEqualTo(viaOther);
    });
  }
}

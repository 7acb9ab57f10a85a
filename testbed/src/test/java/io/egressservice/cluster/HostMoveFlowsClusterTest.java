package io.egressservice.cluster;

import static io.egressservice.testing.LineSockets.ask;
import static io.egressservice.testing.LineSockets.read;
import static io.egressservice.testing.LineSockets.reader;
import static io.egressservice.testing.LineSockets.say;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import io.egressservice.testing.Privileges;
import java.io.BufferedReader;
import java.io.IOException;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * A host move on the namespace cluster: pod-b1, steered by node-b to the host, holds a TCP
 * connection through a ClusterIP (node-b DNATs it to pod-c1, as kube-proxy would), per family, and a UDP flow to the
 * external host. When the host moves from node-a to node-c, node-b restarts pod-b1's flows out of the cluster (its
 * conntrack entry of the external flow goes, and the flow goes on through node-c with the LB IP), while the
 * connections through the ClusterIP go on in both directions.
 */
class HostMoveFlowsClusterTest {
  static final Duration PATIENCE = Duration.ofSeconds(15);
  static final String SERVICE = "web";
  static final List<String> LB_IPS = List.of(Addresses.lbIp(5, IpFamily.V4), Addresses.lbIp(5, IpFamily.V6));
  static final List<String> CLUSTER_IPS = List.of("172.30.0.20", "fd02::20");
  static final int CLUSTER_PORT = 80;
  static final int BACKEND_PORT = 7100;

  Cluster cluster;
  final List<AutoCloseable> sockets = new ArrayList<>();

  @BeforeEach
  void start() {
    Privileges.assumeNetAdmin();
    cluster = Cluster.standard().start();
  }

  @AfterEach
  void stop() {
    for (AutoCloseable s : sockets) {
      try {
        s.close();
      } catch (Exception e) {
        // best effort
      }
    }
    if (cluster != null) {
      cluster.close();
    }
  }

  @Test
  void hostMoveKeepsTheEndpointsInClusterConnections() throws IOException {
    Cluster.Pod b1 = cluster.pod("pod-b1");
    Cluster.Pod c1 = cluster.pod("pod-c1");
    cluster.api().createLoadBalancer(SERVICE, "172.30.0.10", "fd02::10", LB_IPS,
        List.of(cluster.pod("pod-a1"), b1, c1));
    cluster.api().applyEgressService(SERVICE, SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-a"));
    await().atMost(PATIENCE).until(() -> cluster.api().host(SERVICE).equals(Optional.of("node-a")));
    cluster.node("node-b").netns().nft("table inet esa_test_cluster_ip {\n"
        + "  chain prerouting {\n"
        + "    type nat hook prerouting priority dstnat; policy accept;\n"
        + "    ip daddr " + CLUSTER_IPS.get(0) + " tcp dport " + CLUSTER_PORT + " dnat ip to " + c1.ip(IpFamily.V4) + ":"
        + BACKEND_PORT + "\n"
        + "    ip6 daddr " + CLUSTER_IPS.get(1) + " tcp dport " + CLUSTER_PORT + " dnat ip6 to [" + c1.ip(IpFamily.V6)
        + "]:" + BACKEND_PORT + "\n"
        + "  }\n"
        + "}\n");
    String lbIp = LB_IPS.get(0);
    expectUdp("pod-b1", new Seen("ext-a2", "udp", lbIp));

    DatagramSocket external = keep(cluster.traffic().thread("pod-b1").call(DatagramSocket::new));
    external.setSoTimeout(500);
    external.connect(InetAddress.getByName(Addresses.EXTERNAL_V4), Traffic.ECHO_PORT);
    assertThat(ask(external)).as("the external flow through node-a").contains("saw " + lbIp + " at ext-a2");
    List<Connection> connections = new ArrayList<>();
    for (IpFamily f : IpFamily.values()) {
      connections.add(connect(f, b1, c1));
    }
    for (Connection c : connections) {
      say(c.served(), "one");
      assertThat(read(c.fromServer())).as("%s through the ClusterIP before the move", c.family()).contains("one");
    }

    cluster.api().applyEgressService(SERVICE, SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-c"));
    await().atMost(PATIENCE).until(() -> cluster.api().host(SERVICE).equals(Optional.of("node-c")));
    expectUdp("pod-b1", new Seen("ext-c2", "udp", lbIp));
    String flow = "src=" + b1.ip(IpFamily.V4) + " dst=" + Addresses.EXTERNAL_V4 + " sport=" + external.getLocalPort() + " ";
    await().atMost(PATIENCE).pollInterval(Duration.ofMillis(100)).untilAsserted(() ->
        assertThat(cluster.node("node-b").netns().exec("cat", "/proc/net/nf_conntrack"))
            .as("node-b restarted pod-b1's external flow").doesNotContain(flow));

    for (Connection c : connections) {
      say(c.served(), "two");
      assertThat(read(c.fromServer())).as("%s: the backend's next line, through the ClusterIP, after the move",
          c.family()).contains("two");
      say(c.client(), "three");
      assertThat(read(c.fromClient())).as("%s: the client's next line at the backend, after the move", c.family())
          .contains("three");
    }
    assertThat(ask(external)).as("the same external flow after the move").contains("saw " + lbIp + " at ext-c2");
  }

  /** A connection from {@code from} through the ClusterIP of family {@code f} to a server of {@code to}'s. */
  private record Connection(IpFamily family, Socket client, Socket served, BufferedReader fromServer,
      BufferedReader fromClient) {}

  private Connection connect(IpFamily f, Cluster.Pod from, Cluster.Pod to) throws IOException {
    ServerSocket server = keep(cluster.traffic().thread(to.name()).call(() -> {
      ServerSocket s = new ServerSocket();
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(InetAddress.getByName(to.ip(f)), BACKEND_PORT), 4);
      s.setSoTimeout(5000);
      return s;
    }));
    Socket client = keep(cluster.traffic().thread(from.name()).call(() -> {
      Socket s = new Socket();
      s.connect(new InetSocketAddress(InetAddress.getByName(CLUSTER_IPS.get(f.ordinal())), CLUSTER_PORT), 5000);
      s.setSoTimeout(3000);
      return s;
    }));
    Socket served = keep(server.accept());
    served.setSoTimeout(3000);
    return new Connection(f, client, served, reader(client), reader(served));
  }

  private <T extends AutoCloseable> T keep(T closeable) {
    sockets.add(closeable);
    return closeable;
  }

  private void expectUdp(String from, Seen seen) {
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
      Probe p = cluster.traffic().udp(from, Addresses.EXTERNAL_V4);
      assertThat(p.seen()).as("udp %s -> external: who saw it", from).containsExactly(seen);
    });
  }
}

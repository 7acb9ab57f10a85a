package io.egressservice.datapath;

import static io.egressservice.datapath.Topology.EXTERNAL;
import static io.egressservice.datapath.Topology.EXTERNAL_V6;
import static io.egressservice.datapath.Topology.LB_IP;
import static io.egressservice.datapath.Topology.LB_IP_V6;
import static io.egressservice.datapath.Topology.POD1;
import static io.egressservice.datapath.Topology.POD1_V6;
import static io.egressservice.testing.LineSockets.ask;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.netlink.NetnsThread;
import io.egressservice.nft.NoHostNftables;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The no-host table's guard with real packets after {@code apply}: it drops what would leave the
 * cluster in the original direction without the LB IP, and nothing else. pod1 is the endpoint of a LoadBalancerIP
 * service on network 101 (default via up1), both families; the uplink's router up1 is the host outside the cluster
 * that connects to pod1's own address (it routes the pod network to the node).
 */
class NoHostGuardDatapathTest extends TopologyCase {
  static final String UP1_V4 = "172.16.1.2";
  static final String UP1_V6 = "fd00:172:16:1::2";
  private static final Pattern PACKETS = Pattern.compile("packets (\\d+)");

  @BeforeEach
  void setUp() {
    topo.enableIpv6();
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void noHostGuardLetsRepliesOfInboundConnectionsOut(String ruleMode) {
    expectTcp("up1", POD1, "pod1", UP1_V4);

    apply(ruleMode);

    assertThat(guard()).as("the guard is in force").contains("@ours_v4", "@ours_v6");
    expectUdp("pod1", EXTERNAL, "up1", LB_IP); // the service is in force
    expectUdp("pod1", EXTERNAL_V6, "up1", LB_IP_V6);
    expectTcp("up1", POD1, "pod1", UP1_V4);
    expectUdp("up1", POD1, "pod1", UP1_V4);
    expectTcp("up1", POD1_V6, "pod1", UP1_V6);
    expectUdp("up1", POD1_V6, "pod1", UP1_V6);
  }

  /**
   * The control: a flow of pod1's whose NAT was chosen before the service (it leaves with pod1's own address, in
   * the original direction) is still dropped and counted, while a new flow leaves with the LB IP.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void noHostGuardStillDropsAFlowOfOursLeavingWithoutTheLbIp(String ruleMode) {
    // The node tracks connections before the agent comes (as every node with kube-proxy or a CNI does): without
    // that, the flow's first packet after apply would be its first tracked one, and NATed as new.
    topo.chain("node", "inet esa_test_ct", "filter", "forward", "0", "ct state new counter");
    try (NetnsThread pod1 = NetnsThread.enter(Optional.of(topo.ns("pod1").name()));
        DatagramSocket old = pod1.call(DatagramSocket::new)) {
      old.setSoTimeout(300);
      old.connect(InetAddress.getByName(EXTERNAL), Topology.PORT);
      assertThat(ask(old)).as("before the service").contains("saw " + POD1 + " at up1");

      apply(ruleMode);
      long dropped = guardDrops();

      for (int i = 0; i < 3; i++) {
        assertThat(ask(old)).as("the old flow, still without the LB IP, after the service").isEmpty();
      }
      assertThat(guardDrops() - dropped).as("packets the guard dropped").isGreaterThanOrEqualTo(3);
      expectUdp("pod1", EXTERNAL, "up1", LB_IP);
    } catch (java.io.IOException e) {
      throw new java.io.UncheckedIOException(e);
    }
  }

  private String guard() {
    return topo.node().exec("nft", "list", "chain", "inet", NoHostNftables.TABLE, "postrouting");
  }

  private long guardDrops() {
    Matcher m = PACKETS.matcher(topo.node().exec("nft", "list", "counter", "inet", NoHostNftables.TABLE,
        "steered_unsnatted"));
    assertThat(m.find()).as("the guard's counter").isTrue();
    return Long.parseLong(m.group(1));
  }

  private void apply(String ruleMode) {
    Path file = ParityDatapathTest.write(tmp.resolve("objects"), ParityDatapathTest.service("web", "LoadBalancerIP",
        "101", "node", "Cluster", List.of(LB_IP, LB_IP_V6), List.of("172.30.0.10", "fd02::10"),
        List.of(POD1, POD1_V6)));
    agent("apply", "--objects", file.toString(), "--node", "node",
        "--netns", topo.node().name(), "--cluster-cidr", "10.128.0.0/16,fd00:10:128::/48",
        "--service-cidr", "172.30.0.0/16,fd02::/112", "--rule-mode", ruleMode);
  }
}

package io.egressservice.datapath;

import static io.egressservice.datapath.Topology.EXTERNAL;
import static io.egressservice.datapath.Topology.EXTERNAL_V6;
import static io.egressservice.datapath.Topology.LB_IP;
import static io.egressservice.datapath.Topology.LB_IP_V6;
import static io.egressservice.datapath.Topology.POD1;
import static io.egressservice.datapath.Topology.POD1_V6;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.cli.InProcess;
import io.egressservice.datapath.Topology.Probe;
import io.egressservice.datapath.Topology.Seen;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.nft.NoHostNftables;
import io.egressservice.testing.Privileges;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The no-host table's guard (issue 28, case 7) with real packets after {@code apply}: it drops what would leave the
 * cluster in the original direction without the LB IP, and nothing else. pod1 is the endpoint of a LoadBalancerIP
 * service on network 101 (default via up1), both families; the uplink's router up1 is the host outside the cluster
 * that connects to pod1's own address (it routes the pod network to the node).
 */
class NoHostGuardDatapathTest {
  static final Duration PATIENCE = Duration.ofSeconds(5);
  static final String UP1_V4 = "172.16.1.2";
  static final String UP1_V6 = "fd00:172:16:1::2";
  private static final Pattern PACKETS = Pattern.compile("packets (\\d+)");

  Topology topo;
  @TempDir Path tmp;

  static Stream<String> ruleModes() {
    return Stream.of("source", "mark");
  }

  @BeforeEach
  void setUp() {
    Privileges.assumeNetAdmin();
    topo = Topology.create();
    topo.enableIpv6();
  }

  @AfterEach
  void tearDown() {
    if (topo != null) {
      topo.close();
    }
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
    topo.node().execWithInput("table inet esa_test_ct {\n  chain forward {\n"
        + "    type filter hook forward priority 0; policy accept;\n    ct state new counter\n  }\n}\n", "nft", "-f", "-");
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

  private static Optional<String> ask(DatagramSocket s) throws java.io.IOException {
    byte[] out = "old-flow".getBytes(StandardCharsets.UTF_8);
    s.send(new DatagramPacket(out, out.length));
    byte[] in = new byte[512];
    DatagramPacket p = new DatagramPacket(in, in.length);
    try {
      s.receive(p);
      return Optional.of(new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8));
    } catch (SocketTimeoutException e) {
      return Optional.empty();
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
    InProcess.Result r = InProcess.run("apply", "--objects", file.toString(), "--node", "node",
        "--netns", topo.node().name(), "--cluster-cidr", "10.128.0.0/16,fd00:10:128::/48",
        "--service-cidr", "172.30.0.0/16,fd02::/112", "--rule-mode", ruleMode);
    assertThat(r.exit()).as("apply exit; out:%n%s%nerr:%n%s", r.out(), r.err()).isZero();
  }

  private void expectUdp(String from, String dst, String where, String source) {
    expect("udp", from, dst, where, source);
  }

  private void expectTcp(String from, String dst, String where, String source) {
    expect("tcp", from, dst, where, source);
  }

  /** Exactly one server saw it, in {@code where}, from {@code source}, and the answer came back. */
  private void expect(String protocol, String from, String dst, String where, String source) {
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50))
        .untilAsserted(() -> {
          Probe p = protocol.equals("udp") ? topo.udp(from, dst) : topo.tcp(from, dst);
          assertThat(p.seen()).as("%s %s -> %s: who saw it", protocol, from, dst)
              .containsExactly(new Seen(where, protocol, source));
          assertThat(p.reply()).as("%s %s -> %s: the answer", protocol, from, dst)
              .contains("saw " + source + " at " + where);
        });
  }
}

package io.egressservice.datapath;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.cli.InProcess;
import io.egressservice.datapath.Topology.Probe;
import io.egressservice.datapath.Topology.Seen;
import io.egressservice.testing.Privileges;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Findings 17.2 and 17.5 in IPv6, with real TCP connections: the {@link Topology}'s namespaces get IPv6
 * addresses of their own here (the echo servers' TCP listeners are dual-stack), an IPv6-only
 * LoadBalancer service for pod1, and the same two situations as {@link DatapathTest}'s IPv4 cases.
 *
 * <pre>
 *  pod1 fd00:10:128::5 ─┐                       ┌─ up1 fd00:172:16:1::2 (main's default), owns EXTERNAL
 *  pod2 fd00:10:128::6 ─┴─ node ─ up1 / up2 ────┴─ up2 fd00:172:16:2::2 (table 100, 102), owns EXTERNAL, LAN_HOST, NODE2_POD
 *                           lan fd00:192:168:1::10/64 ── node2 ::11 and LAN_HOST ::50 on its link, NODE2_POD on lo
 * </pre>
 */
class InClusterIpv6DatapathTest {
  static final String POD1 = "fd00:10:128::5";
  static final String POD2 = "fd00:10:128::6";
  static final String NODE_IP = "fd00:192:168:1::10";
  static final String NODE2_IP = "fd00:192:168:1::11";
  /** On the node subnet, but no node. */
  static final String LAN_HOST = "fd00:192:168:1::50";
  static final String NODE2_POD = "fd00:10:129::5";
  static final String LB_IP = "2001:db8:5::5";
  /** Outside the cluster, owned by both uplinks (as {@link Topology#EXTERNAL}). */
  static final String EXTERNAL = "2001:db8:203::10";
  static final Duration PATIENCE = Duration.ofSeconds(5);

  Topology topo;
  @TempDir Path tmp;

  static Stream<String> ruleModes() {
    return Stream.of("source", "mark");
  }

  @BeforeEach
  void setUp() {
    Privileges.assumeNetAdmin();
    topo = Topology.create();
    batch("node", "-6",
        "addr add fd00:10:128::1/128 dev p1 nodad",
        "addr add fd00:10:128::1/128 dev p2 nodad",
        "addr add fd00:172:16:1::1/64 dev up1 nodad",
        "addr add fd00:172:16:2::1/64 dev up2 nodad",
        "addr add " + NODE_IP + "/64 dev lan nodad",
        "route add " + POD1 + "/128 dev p1",
        "route add " + POD2 + "/128 dev p2",
        "route add fd00:10:129::/64 via " + NODE2_IP,
        "route add default via fd00:172:16:1::2",
        "route add default via fd00:172:16:2::2 table 100",
        "route add default via fd00:172:16:2::2 table 102");
    topo.node().execWithInput("echo 1 > /proc/sys/net/ipv6/conf/all/forwarding\n", "sh");
    for (String[] pod : new String[][] {{"pod1", POD1}, {"pod2", POD2}}) {
      batch(pod[0], "-6", "addr add " + pod[1] + "/128 dev eth0 nodad", "route add fd00:10:128::1/128 dev eth0",
          "route add default via fd00:10:128::1 dev eth0");
    }
    for (String up : new String[] {"up1", "up2"}) {
      String n = up.substring(2);
      topo.ns(up).execWithInput("echo 1 > /proc/sys/net/ipv6/conf/all/forwarding\n", "sh");
      batch(up, "-6", "addr add fd00:172:16:" + n + "::2/64 dev eth0 nodad", "addr add " + EXTERNAL + "/128 dev lo",
          "route add fd00:10:128::/48 via fd00:172:16:" + n + "::1", "route add " + LB_IP + "/128 via fd00:172:16:" + n + "::1");
    }
    batch("up2", "-6", "addr add " + LAN_HOST + "/128 dev lo", "addr add " + NODE2_POD + "/128 dev lo");
    batch("node2", "-6", "addr add " + NODE2_IP + "/64 dev eth0 nodad", "addr add " + LAN_HOST + "/64 dev eth0 nodad",
        "addr add " + NODE2_POD + "/128 dev lo", "route add default via " + NODE_IP);
  }

  @AfterEach
  void tearDown() {
    if (topo != null) {
      topo.close();
    }
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void ipv6AnotherComponentsRuleForAPodThatNeverOptedInKeepsWorking(String ruleMode) {
    topo.node().exec("ip", "-6", "rule", "add", "priority", "6000", "from", POD2, "to", "fd00:10:129::/64", "lookup", "102");
    expectTcp("pod2", NODE2_POD, "up2", POD2);

    apply(ruleMode);

    expectTcp("pod1", EXTERNAL, "up2", LB_IP); // the service is in force
    expectTcp("pod2", NODE2_POD, "up2", POD2);
    expectTcp("pod1", NODE2_POD, "node2", POD1);
    assertThat(topo.node().exec("ip", "-6", "rule", "show")).doesNotContain("4999:");
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void ipv6AnExternalHostOnTheNodeSubnetIsReachedThroughTheServicesNetwork(String ruleMode) {
    expectTcp("pod1", LAN_HOST, "node2", POD1);

    apply(ruleMode);

    expectTcp("pod1", LAN_HOST, "up2", LB_IP);
    expectTcp("pod1", NODE2_IP, "node2", POD1);
  }

  private void batch(String role, String family, String... commands) {
    topo.ns(role).execWithInput(String.join("\n", commands) + "\n", "ip", family, "-batch", "-");
  }

  /** An IPv6-only LoadBalancerIP service for pod1 on network 100, host this node; Nodes with IPv6 pod CIDRs. */
  void apply(String ruleMode) {
    String yaml = node("node", NODE_IP, "fd00:10:128::/64") + "---\n" + node("node2", NODE2_IP, "fd00:10:129::/64") + """
        ---
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: web, namespace: default, creationTimestamp: "2026-11-01T10:00:00Z"}
        spec: {sourceIPBy: LoadBalancerIP, network: "100"}
        status: {host: node}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web, namespace: default}
        spec: {type: LoadBalancer, clusterIP: "fd02::10", clusterIPs: ["fd02::10"], ipFamilies: [IPv6], selector: {app: web}}
        status: {loadBalancer: {ingress: [{ip: "%s"}]}}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata:
          name: web-v6
          namespace: default
          labels: {kubernetes.io/service-name: web, endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}
        addressType: IPv6
        endpoints:
          - {addresses: ["%s"], nodeName: node, conditions: {ready: true}}
        """.formatted(LB_IP, POD1);
    try {
      Path file = Files.writeString(Files.createDirectories(tmp.resolve(ruleMode)).resolve("objects.yaml"), yaml);
      InProcess.Result r = InProcess.run("apply", "--objects", file.toString(), "--node", "node",
          "--netns", topo.node().name(), "--service-cidr", "fd02::/112", "--rule-mode", ruleMode);
      assertThat(r.exit()).as("apply exit; out:%n%s%nerr:%n%s", r.out(), r.err()).isZero();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String node(String name, String ip, String podCidr) {
    return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name + "}\nspec: {podCIDRs: [\"" + podCidr + "\"]}\n"
        + "status: {addresses: [{type: InternalIP, address: \"" + ip + "\"}], conditions: [{type: Ready, status: \"True\"}]}\n";
  }

  /** Exactly one server saw the connection, in {@code where}, from {@code source}. */
  void expectTcp(String from, String dst, String where, String source) {
    String seenAs = canonical(source);
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
      Probe p = topo.tcp(from, dst);
      assertThat(p.seen()).as("tcp %s -> %s: who saw it", from, dst).containsExactly(new Seen(where, "tcp", seenAs));
    });
  }

  /** How the echo server prints an address (canonical text). */
  private static String canonical(String address) {
    return io.egressservice.ip.IpPrefix.parse(address).addressText();
  }
}

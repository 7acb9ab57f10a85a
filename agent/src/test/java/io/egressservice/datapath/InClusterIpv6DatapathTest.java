package io.egressservice.datapath;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.datapath.NamespaceTopology.Probe;
import io.egressservice.datapath.NamespaceTopology.Seen;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

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
class InClusterIpv6DatapathTest extends TopologyCase {
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

  @BeforeEach
  void setUp() {
    topo.sysctl("node", "net.ipv6.conf.all.forwarding=1");
    topo.podAddress("node", "p1", "pod1", POD1, "fd00:10:128::1/128");
    topo.podAddress("node", "p2", "pod2", POD2, "fd00:10:128::1/128");
    topo.address("node", "up1", "fd00:172:16:1::1/64");
    topo.address("node", "up2", "fd00:172:16:2::1/64");
    topo.address("node", "lan", NODE_IP + "/64");
    topo.batch("node",
        "route add fd00:10:129::/64 via " + NODE2_IP,
        "route add default via fd00:172:16:1::2",
        "route add default via fd00:172:16:2::2 table 100",
        "route add default via fd00:172:16:2::2 table 102");
    for (String up : new String[] {"up1", "up2"}) {
      String n = up.substring(2);
      topo.sysctl(up, "net.ipv6.conf.all.forwarding=1");
      topo.address(up, "eth0", "fd00:172:16:" + n + "::2/64");
      topo.owns(up, EXTERNAL);
      topo.batch(up, "route add fd00:10:128::/48 via fd00:172:16:" + n + "::1",
          "route add " + LB_IP + "/128 via fd00:172:16:" + n + "::1");
    }
    topo.owns("up2", LAN_HOST, NODE2_POD);
    topo.address("node2", "eth0", NODE2_IP + "/64", LAN_HOST + "/64");
    topo.owns("node2", NODE2_POD);
    topo.batch("node2", "route add default via " + NODE_IP);
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
    Path file = ClusterFiles.writeDocuments(tmp.resolve(ruleMode), List.of(yaml));
    agent("apply", "--objects", file.toString(), "--node", "node",
        "--netns", topo.node().name(), "--service-cidr", "fd02::/112", "--rule-mode", ruleMode);
  }

  private static String node(String name, String ip, String podCidr) {
    return "apiVersion: v1\nkind: Node\nmetadata: {name: " + name + "}\nspec: {podCIDRs: [\"" + podCidr + "\"]}\n"
        + "status: {addresses: [{type: InternalIP, address: \"" + ip + "\"}], conditions: [{type: Ready, status: \"True\"}]}\n";
  }

  /** Exactly one server saw the connection, in {@code where}, from {@code source}. */
  @Override
  void expectTcp(String from, String dst, String where, String source) {
    String seenAs = canonical(source);
    eventually(() -> {
      Probe p = topo.tcp(from, dst);
      assertThat(p.seen()).as("tcp %s -> %s: who saw it", from, dst).containsExactly(new Seen(where, "tcp", seenAs));
    });
  }

  /** How the echo server prints an address (canonical text). */
  private static String canonical(String address) {
    return io.egressservice.ip.IpPrefix.parse(address).addressText();
  }
}

package io.egressservice.datapath;

import static io.egressservice.datapath.Topology.CLIENT;
import static io.egressservice.datapath.Topology.CLIENT_V6;
import static io.egressservice.datapath.Topology.EXTERNAL;
import static io.egressservice.datapath.Topology.EXTERNAL_V6;
import static io.egressservice.datapath.Topology.LB_IP;
import static io.egressservice.datapath.Topology.LB_IP_V6;
import static io.egressservice.datapath.Topology.LB_PORT;
import static io.egressservice.datapath.Topology.LGW_POD;
import static io.egressservice.datapath.Topology.LGW_POD_V6;
import static io.egressservice.datapath.Topology.POD1;
import static io.egressservice.datapath.Topology.POD1_V6;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.datapath.ObjectsYaml.Endpoint;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Real packets for parity with OVN-Kubernetes' datapath, in both rule modes:
 * 1. strict reverse-path filtering, 3. ETP=Local on OVN-Kubernetes' local gateway path (both families),
 * 4. dual stack with only an IPv4 LB IP. Like {@link DatapathTest}: a fresh {@link Topology} per case,
 * the agent driven by {@code apply --netns <node>}, the external side says what it saw.
 */
class ParityDatapathTest extends TopologyCase {
  static final int NODE_PORT = 30300;

  // ---- strict reverse-path filtering -------------------------------------------------------------

  /**
   * rp_filter=1 in the node (all, default, every link). Replies from the external host come back on up2,
   * and the client connects to the LB IP through up2: the kernel's reverse-path check must route their
   * sources back out of up2, which in mark mode it does only with the connection's mark and
   * src_valid_mark on up2. Before the fix, mark mode lost the TCP handshakes to reverse-path drops.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void strictReversePathFilteringDropsNothingOfTheServiceInEitherDirection(String ruleMode) {
    topo.strictReversePathFilter();
    topo.installLoadBalancerDnat();
    topo.installReplyCounters();
    topo.clientReachesLoadBalancerVia("up2");
    long dropsBefore = topo.reversePathDrops();

    apply(ruleMode, List.of(), service("web", "LoadBalancerIP", "100", "node", "Cluster", List.of(LB_IP),
        List.of("172.30.0.10"), List.of(POD1)));

    expectTcp("pod1", EXTERNAL, "up2", LB_IP);
    expectUdp("pod1", EXTERNAL, "up2", LB_IP);
    expectInboundConnection(LB_IP, "pod1", CLIENT, "up2", "v4");
    assertThat(dryRun(ruleMode)).as("a second apply finds nothing to do").contains(": 0 difference(s)");
    // Only the uplink of the marked network gets src_valid_mark, and only in mark mode; never "all".
    assertThat(conf("up2", "src_valid_mark")).isEqualTo(ruleMode.equals("mark") ? "1" : "0");
    assertThat(conf("up1", "src_valid_mark")).isEqualTo("0");
    assertThat(conf("all", "src_valid_mark")).isEqualTo("0");

    apply(ruleMode, List.of(), service("web", "Network", "100", "ALL", "Cluster", List.of(LB_IP),
        List.of("172.30.0.10"), List.of(POD1)));

    expectTcp("pod1", EXTERNAL, "up2", POD1);
    expectInboundConnection(LB_IP, "pod1", CLIENT, "up2", "v4");
    assertThat(topo.reversePathDrops()).as("reverse-path drops in the node").isEqualTo(dropsBefore);
    expectUdp("pod2", EXTERNAL, "up1", Topology.POD2); // a pod that did not opt in, under the same filter

    apply(ruleMode, List.of());
    assertThat(topo.node().tryExec("nft", "list", "table", "inet", "egress_service_agent").stdout())
        .doesNotContain("mark_reply");
    expectTcp("pod1", EXTERNAL, "up1", POD1);
  }

  private String conf(String device, String setting) {
    return topo.node().exec("cat", "/proc/sys/net/ipv4/conf/" + device + "/" + setting).trim();
  }

  // ---- ETP=Local on OVN-Kubernetes' local gateway path --------------------------------------------

  /**
   * ETP=Local on OVN-Kubernetes' local gateway path, both families: LB IP -> masquerade IP:nodePort ->
   * pod. The node's routing decision for the reply sees the masquerade IP and the node port; with
   * {@code --ovn-masquerade-ips} the agent adds OVN-Kubernetes' {@code from <masquerade IP> sport
   * <nodePort>} rule and the reply leaves through the service's network (up2), not the main table's up1.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void etpLocalRepliesOnTheLocalGatewayPathLeaveThroughTheServiceNetworkBothFamilies(String ruleMode) {
    topo.enableIpv6();
    topo.installOvnLocalGateway(NODE_PORT);
    topo.installDualStackReplyCounters();
    expectInboundConnection(LB_IP, "lgwpod", CLIENT, "up1", "v4");
    expectInboundConnection(LB_IP_V6, "lgwpod", CLIENT_V6, "up1", "v6");

    Obj svc = service("web", "LoadBalancerIP", "100", "node", "Local", List.of(LB_IP, LB_IP_V6),
        List.of("172.30.0.10", "fd02::10"), List.of(LGW_POD, LGW_POD_V6));
    apply(ruleMode, List.of("--ovn-masquerade-ips", "169.254.169.3,fd69::3"), svc);

    assertThat(topo.node().exec("ip", "rule", "show")).contains("from 169.254.169.3 sport " + NODE_PORT + " lookup 100");
    assertThat(topo.node().exec("ip", "-6", "rule", "show")).contains("from fd69::3 sport " + NODE_PORT + " lookup 100");
    expectInboundConnection(LB_IP, "lgwpod", CLIENT, "up2", "v4");
    expectInboundConnection(LB_IP_V6, "lgwpod", CLIENT_V6, "up2", "v6");

    apply(ruleMode, List.of("--ovn-masquerade-ips", "169.254.169.3,fd69::3"), service("web", "Network", "100", "ALL",
        "Local", List.of(LB_IP, LB_IP_V6), List.of("172.30.0.10", "fd02::10"), List.of(LGW_POD, LGW_POD_V6)));
    expectInboundConnection(LB_IP, "lgwpod", CLIENT, "up2", "v4");
    expectInboundConnection(LB_IP_V6, "lgwpod", CLIENT_V6, "up2", "v6");

    apply(ruleMode, List.of("--ovn-masquerade-ips", "169.254.169.3,fd69::3"));
    expectInboundConnection(LB_IP, "lgwpod", CLIENT, "up1", "v4");
    expectInboundConnection(LB_IP_V6, "lgwpod", CLIENT_V6, "up1", "v6");
  }

  // ---- dual stack with only an IPv4 LB IP ---------------------------------------------------------

  /** Dual stack, only an IPv4 LB IP: the IPv6 endpoint still leaves through the network, with its own address. */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void ipv6EndpointWithoutAnIpv6LbIpLeavesThroughTheNetworkWithoutSnat(String ruleMode) {
    topo.enableIpv6();
    expectUdp("pod1", EXTERNAL_V6, "up1", POD1_V6);

    apply(ruleMode, List.of(), service("web", "LoadBalancerIP", "100", "node", "Cluster", List.of(LB_IP),
        List.of("172.30.0.10", "fd02::10"), List.of(POD1, POD1_V6)));

    expectUdp("pod1", EXTERNAL_V6, "up2", POD1_V6);
    expectTcp("pod1", EXTERNAL_V6, "up2", POD1_V6);
    expectUdp("pod1", EXTERNAL, "up2", LB_IP); // IPv4 as before: the network and the LB IP
  }

  // ---- objects and probes -------------------------------------------------------------------------

  /** One EgressService with its LoadBalancer Service and EndpointSlices (one per family) on node "node". */
  record Obj(String name, String sourceIpBy, String network, String host, String etp, List<String> lbIps,
      List<String> clusterIps, List<String> endpoints) {}

  static Obj service(String name, String sourceIpBy, String network, String host, String etp, List<String> lbIps,
      List<String> clusterIps, List<String> endpoints) {
    return new Obj(name, sourceIpBy, network, host, etp, lbIps, clusterIps, endpoints);
  }

  void apply(String ruleMode, List<String> flags, Obj... services) {
    Path file = write(tmp.resolve("step-" + (++step)), services);
    List<String> args = new ArrayList<>(List.of("apply", "--objects", file.toString(), "--node", "node",
        "--netns", topo.node().name(), "--cluster-cidr", "10.128.0.0/16,fd00:10:128::/48",
        "--service-cidr", "172.30.0.0/16,fd02::/112", "--rule-mode", ruleMode));
    args.addAll(flags);
    agent(args.toArray(String[]::new));
  }

  /** {@code apply --dry-run} with the last step's objects. */
  String dryRun(String ruleMode) {
    return agent("apply", "--dry-run", "--objects", tmp.resolve("step-" + step).resolve("objects.yaml")
        .toString(), "--node", "node", "--netns", topo.node().name(), "--cluster-cidr", "10.128.0.0/16,fd00:10:128::/48",
        "--service-cidr", "172.30.0.0/16,fd02::/112", "--rule-mode", ruleMode).out();
  }

  static Path write(Path dir, Obj... services) {
    List<String> docs = new ArrayList<>();
    docs.add(node("node", Topology.NODE_IP, "10.128.0.0/24", "fd00:10:128::/64"));
    docs.add(node("node2", Topology.NODE2_IP, "10.128.1.0/24", "fd00:10:128:1::/64"));
    for (Obj s : services) {
      docs.add(ObjectsYaml.egressService(s.name(), s.sourceIpBy(), Optional.of(s.network()), s.host()));
      docs.add(ObjectsYaml.loadBalancer(s.name(), s.clusterIps(), s.lbIps(), LB_PORT, Topology.PORT)
          .externalTrafficPolicy(s.etp()).nodePort(NODE_PORT).yaml());
      for (String family : List.of("IPv4", "IPv6")) {
        List<Endpoint> eps = s.endpoints().stream().filter(e -> e.contains(":") == family.equals("IPv6"))
            .map(e -> Endpoint.ready(e, "node")).toList();
        if (!eps.isEmpty()) {
          docs.add(ObjectsYaml.endpointSlice(s.name() + "-" + family.toLowerCase(), s.name(), family, eps,
              Topology.PORT));
        }
      }
    }
    return ClusterFiles.writeDocuments(dir, docs);
  }

  private static String node(String name, String ip, String... podCidrs) {
    return ObjectsYaml.node(name).hostnameLabel().podCidrs(podCidrs).internalIps(ip).ready().yaml();
  }
}

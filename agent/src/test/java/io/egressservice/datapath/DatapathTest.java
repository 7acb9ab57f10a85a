package io.egressservice.datapath;

import static io.egressservice.datapath.Topology.CLIENT;
import static io.egressservice.datapath.Topology.EXTERNAL;
import static io.egressservice.datapath.Topology.LB_IP;
import static io.egressservice.datapath.Topology.LB_IP_2;
import static io.egressservice.datapath.Topology.NODE2_IP;
import static io.egressservice.datapath.Topology.NODE2_POD;
import static io.egressservice.datapath.Topology.NODE_UPLINK_IP;
import static io.egressservice.datapath.Topology.POD1;
import static io.egressservice.datapath.Topology.POD2;
import static io.egressservice.datapath.Topology.POD3;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.cli.InProcess;
import io.egressservice.datapath.ClusterFiles.Service;
import io.egressservice.testing.Netns;
import java.nio.file.Path;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Real packets through the agent's rules and SNAT (DESIGN.md section 5, "datapath"; the E2E scenarios of
 * OVN-Kubernetes' egress_services.go). Each case builds a fresh {@link Topology}, drives the agent with
 * {@code apply --netns <node>} exactly as a user would, and asserts what the external side saw: the
 * source address and which uplink (namespace) received it, before and after.
 *
 * <p>The topology, the probes' patience and the assertions on what was seen are {@link TopologyCase}'s.
 * Every case takes the agent's rule mode as its parameter and changes the agent only through
 * {@link #apply}, and every case runs in both rule modes ({@link #ruleModes()}).
 *
 * <p>No masquerade is installed on the node (no CNI here): with {@code sourceIPBy: Network} the packet
 * keeps the pod's own address on the chosen uplink.
 */
class DatapathTest extends TopologyCase {
  // ---- the cases --------------------------------------------------------------------------------

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void withoutEgressServicePodTrafficLeavesByTheMainTableWithItsOwnAddress(String ruleMode) {
    apply(ruleMode);

    expectUdp("pod1", EXTERNAL, "up1", POD1);
    expectTcp("pod1", EXTERNAL, "up1", POD1);
    expectPod2Untouched();
    assertThat(topo.node().exec("ip", "rule", "show")).doesNotContain("proto 201");
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void loadBalancerIpOnNetwork100LeavesByUplink2WithTheLbIp(String ruleMode) {
    expectUdp("pod1", EXTERNAL, "up1", POD1);

    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));

    expectUdp("pod1", EXTERNAL, "up2", LB_IP);
    expectTcp("pod1", EXTERNAL, "up2", LB_IP);
    expectPod2Untouched();
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void networkOnNetwork100LeavesByUplink2WithoutLbSnat(String ruleMode) {
    expectUdp("pod1", EXTERNAL, "up1", POD1);

    apply(ruleMode, web("Network", "100", "ALL"));

    expectUdp("pod1", EXTERNAL, "up2", POD1);
    expectTcp("pod1", EXTERNAL, "up2", POD1);
    expectPod2Untouched();
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void loadBalancerIpWithoutNetworkKeepsUplink1WithTheLbIp(String ruleMode) {
    expectTcp("pod1", EXTERNAL, "up1", POD1);

    apply(ruleMode, web("LoadBalancerIP", null, ClusterFiles.NODE));

    expectTcp("pod1", EXTERNAL, "up1", LB_IP);
    expectUdp("pod1", EXTERNAL, "up1", LB_IP);
    expectPod2Untouched();
    assertThat(topo.node().exec("ip", "rule", "show")).doesNotContain("proto 201");
  }

  /**
   * The client reaches LB_IP:80 through up1; the node DNATs it to pod1 (the test's stand-in for
   * kube-proxy). The reply's source is un-DNATed back to the LB IP only in POSTROUTING, after the routing
   * decision, so the routing decision sees the pod's address and the endpoint's {@code from} rule sends
   * the reply into table 100, i.e. up2; up2's counter of packets from LB_IP:80 proves it.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void repliesToInboundLoadBalancerConnectionsLeaveThroughTheServiceNetwork(String ruleMode) {
    topo.installLoadBalancerDnat();
    topo.installReplyCounters();
    expectInboundRepliesVia("up1");

    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));
    expectInboundRepliesVia("up2");

    apply(ruleMode, web("Network", "100", "ALL"));
    expectInboundRepliesVia("up2");

    apply(ruleMode);
    expectInboundRepliesVia("up1");
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void aPodThatDidNotOptInAndPodToPodTrafficAreNeverChanged(String ruleMode) {
    expectPod2Untouched();
    expectUdp("pod1", POD2, "pod2", POD1);

    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));

    expectUdp("pod1", EXTERNAL, "up2", LB_IP); // the service is in force
    expectPod2Untouched();
    expectUdp("pod1", POD2, "pod2", POD1);
    expectTcp("pod1", POD2, "pod2", POD1);
    expectUdp("pod2", POD1, "pod1", POD2);

    apply(ruleMode, web("Network", "100", "ALL"));

    expectUdp("pod1", EXTERNAL, "up2", POD1);
    expectPod2Untouched();
    expectTcp("pod1", POD2, "pod2", POD1);
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void deletingTheEgressServiceRestoresTheMainTableAndLeavesNothingOwned(String ruleMode) {
    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));
    expectUdp("pod1", EXTERNAL, "up2", LB_IP);
    assertThat(topo.node().exec("ip", "rule", "show")).contains("proto 201");

    apply(ruleMode);

    expectUdp("pod1", EXTERNAL, "up1", POD1);
    expectTcp("pod1", EXTERNAL, "up1", POD1);
    expectPod2Untouched();
    assertThat(topo.node().exec("ip", "rule", "show")).doesNotContain("proto 201");
    assertThat(topo.node().exec("ip", "-6", "rule", "show")).doesNotContain("proto 201");
    Netns.Result map = topo.node().tryExec("nft", "list", "map", "inet", "egress_service_agent", "snat_v4");
    if (map.exitCode() == 0) {
      assertThat(map.stdout()).as("the agent's SNAT map").doesNotContain("elements");
    }
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void twoNetworkServicesReachTheirOwnExternalHostsSharingOneAddress(String ruleMode) {
    expectUdp("pod1", EXTERNAL, "up1", POD1);
    expectUdp("pod3", EXTERNAL, "up1", POD3);

    apply(ruleMode,
        ClusterFiles.service("net1", "Network", "101", "ALL", LB_IP, "172.30.0.10", POD1),
        ClusterFiles.service("net2", "Network", "102", "ALL", LB_IP_2, "172.30.0.11", POD3));

    expectUdp("pod1", EXTERNAL, "up1", POD1);
    expectUdp("pod3", EXTERNAL, "up2", POD3);
    expectTcp("pod1", EXTERNAL, "up1", POD1);
    expectTcp("pod3", EXTERNAL, "up2", POD3);
    expectPod2Untouched();

    apply(ruleMode);

    expectUdp("pod3", EXTERNAL, "up1", POD3);
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void trafficToAnotherNodeAndToTheClusterKeepsTheMainTableAndItsSource(String ruleMode) {
    expectUdp("pod1", NODE2_IP, "node2", POD1);

    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));

    expectUdp("pod1", EXTERNAL, "up2", LB_IP); // the service is in force
    expectUdp("pod1", NODE2_IP, "node2", POD1); // another node: connected subnet 192.168.1.0/24
    expectTcp("pod1", NODE2_IP, "node2", POD1);
    expectUdp("pod1", NODE2_POD, "node2", POD1); // a pod on another node: cluster CIDR
    expectTcp("pod1", POD2, "pod2", POD1); // a pod on this node
  }

  /**
   * Another component's rule at 6000 routes pod2 (which never opted in) to node2's pods
   * through table 102 (up2 stands in for its path and owns NODE2_POD too). An EgressService with a
   * network for pod1 must not bypass it: no rule for all sources ahead of it.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void anotherComponentsRuleForAPodThatNeverOptedInKeepsWorking(String ruleMode) {
    topo.ns("up2").exec("ip", "addr", "add", NODE2_POD + "/32", "dev", "lo");
    topo.node().exec("ip", "rule", "add", "priority", "6000", "from", POD2, "to", "10.128.1.0/24", "lookup", "102");
    expectTcp("pod2", NODE2_POD, "up2", POD2);

    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));

    expectUdp("pod1", EXTERNAL, "up2", LB_IP); // the service is in force
    expectTcp("pod2", NODE2_POD, "up2", POD2);
    expectTcp("pod1", NODE2_POD, "node2", POD1); // the opted-in pod's in-cluster traffic: main, its own source
    assertThat(topo.node().exec("ip", "rule", "show")).doesNotContain("4999:");
  }

  /**
   * An external host on the node subnet (kind's layout): 192.168.1.50 is on the node subnet but is no node. Reached directly on
   * the lan it is node2's side that answers; through table 100 it is up2. The service's pod must reach
   * it through the service's network, while node2 itself (a Node address) keeps main and the pod's source.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void anExternalHostOnTheNodeSubnetIsReachedThroughTheServicesNetwork(String ruleMode) {
    String lanHost = "192.168.1.50";
    topo.ns("node2").exec("ip", "addr", "add", lanHost + "/32", "dev", "lo");
    topo.ns("up2").exec("ip", "addr", "add", lanHost + "/32", "dev", "lo");
    expectTcp("pod1", lanHost, "node2", POD1);

    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));

    expectTcp("pod1", lanHost, "up2", LB_IP);
    expectTcp("pod1", NODE2_IP, "node2", POD1);
  }

  /**
   * An address the node has but its Node object does not list is an in-cluster destination
   * by exact address: never SNATed, thrown back from the service's table. (Traffic to the node's own
   * address is delivered locally before any table or POSTROUTING, so this is asserted on the kernel's
   * state: the addresses of other nodes that their Node objects omit come in through --exclude-cidr.)
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void theNodesAddressesNotInItsNodeObjectAreNeverSnatedAndAreThrownBack(String ruleMode) {
    topo.node().exec("ip", "addr", "add", "192.168.7.1/24", "dev", "lan");

    apply(ruleMode, web("LoadBalancerIP", "100", ClusterFiles.NODE));

    String set = topo.node().exec("nft", "list", "set", "inet", "egress_service_agent", "in_cluster_v4");
    assertThat(set).contains("192.168.7.1", NODE_UPLINK_IP, "172.16.2.1", Topology.NODE_IP);
    assertThat(topo.node().exec("ip", "route", "show", "table", "100"))
        .contains("throw 192.168.7.1 proto 201", "throw " + NODE_UPLINK_IP + " proto 201")
        .doesNotContain("throw 192.168.7.0/24", "throw 192.168.1.0/24");
    expectUdp("pod1", EXTERNAL, "up2", LB_IP);
  }

  /**
   * No pod CIDRs known (Nodes without spec.podCIDRs, no --cluster-cidr) and a slice that
   * lists the node's uplink address, which its Node object does not: the address is refused, so the
   * node's own traffic keeps its source, while the service's pod is SNATed.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void theNodesUplinkAddressInASliceIsRefusedAndTheNodesOwnTrafficKeepsItsSource(String ruleMode) {
    expectUdp("node", EXTERNAL, "up1", NODE_UPLINK_IP);
    Path file = ClusterFiles.write(tmp.resolve("no-pod-cidrs"), false, ClusterFiles.service("web", "LoadBalancerIP",
        null, ClusterFiles.NODE, LB_IP, "172.30.0.10", POD1, NODE_UPLINK_IP));

    InProcess.Result r = agent("apply", "--objects", file.toString(), "--node", ClusterFiles.NODE,
        "--netns", topo.node().name(), "--service-cidr", "172.30.0.0/16", "--rule-mode", ruleMode);

    expectUdp("pod1", EXTERNAL, "up1", LB_IP);
    expectUdp("node", EXTERNAL, "up1", NODE_UPLINK_IP);
    expectTcp("node", EXTERNAL, "up1", NODE_UPLINK_IP);
    assertThat(r.out()).contains("skipped " + NODE_UPLINK_IP + ": an address of this node");
  }

  // ---- how the cases drive the agent and look at packets ----------------------------------------

  static Service web(String sourceIpBy, String network, String host) {
    return ClusterFiles.service("web", sourceIpBy, network, host, LB_IP, "172.30.0.10", POD1);
  }

  /** The one way a case changes the agent: {@code apply} in-process, with the Nodes and {@code services}. */
  void apply(String ruleMode, Service... services) {
    Path file = ClusterFiles.write(tmp.resolve("step-" + (++step)), services);
    agent("apply", "--objects", file.toString(), "--node", ClusterFiles.NODE,
        "--netns", topo.node().name(), "--cluster-cidr", "10.128.0.0/16", "--service-cidr", "172.30.0.0/16",
        "--rule-mode", ruleMode);
  }

  /** pod2 never opted in: it leaves by up1 with its own address, whatever the agent does for pod1. */
  void expectPod2Untouched() {
    expectUdp("pod2", EXTERNAL, "up1", POD2);
  }

  /** The client's connection to LB_IP:80 reaches pod1 and the replies cross {@code up} (and not the other). */
  void expectInboundRepliesVia(String up) {
    expectInboundConnection(LB_IP, "pod1", CLIENT, up, "v4");
  }
}

package io.egressservice.datapath;

import static io.egressservice.datapath.SteeringTopology.*;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.cli.InProcess;
import io.egressservice.datapath.SteeringFiles.Cluster;
import io.egressservice.datapath.NamespaceTopology.Probe;
import io.egressservice.datapath.NamespaceTopology.Seen;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Steering with real packets: a pod on node-b whose service's host is node-a leaves
 * through node-a's uplink with the LB IP, over UDP and TCP (1 MB), IPv4 and IPv6, in both rule modes,
 * with a CNI masquerade on node-b and strict reverse-path filtering on node-a. Each node is driven only
 * with {@code apply --objects F --node N --netns <node>}, as a script would.
 */
class SteeringDatapathTest extends NamespaceCase<SteeringTopology> {
  static final int ONE_MB = 1 << 20;

  @Override
  Duration patience() {
    return Duration.ofSeconds(8);
  }

  // ---- the cases --------------------------------------------------------------------------------

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void steeredPodLeavesThroughTheHostsUplinkWithTheLbIpOverUdpAndTcpInBothFamilies(String mode) {
    topo = SteeringTopology.create(1);
    applyBoth(mode, SteeringFiles.web(NODE_A));

    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);
    expectUdp("pod-b", EXTERNAL6, "ext-a", LB_IP6);
    expectTcp("pod-b", EXTERNAL, "ext-a", LB_IP);
    expectTcp("pod-b", EXTERNAL6, "ext-a", LB_IP6);
    // the host's own pod as before
    expectUdp("pod-a", EXTERNAL, "ext-a", LB_IP);
    expectPodB2Untouched();
    assertThat(ip(NODE_B, "-d", "link", "show", "egress-vx")).contains("alias egress-service-agent")
        .contains("vxlan external").contains("dstport 4799").contains("gpe");
    // what lets node-a (rp_filter=1 for all) accept them: loose on the device the agent owns, which has an address
    assertThat(topo.ns(NODE_A).exec("cat", "/proc/sys/net/ipv4/conf/egress-vx/rp_filter").trim()).isEqualTo("2");
    assertThat(ip(NODE_A, "-4", "addr", "show", "dev", "egress-vx")).contains("169.254.0.73/32 scope link");
    assertThat(topo.ns(NODE_A).exec("cat", "/proc/sys/net/ipv4/conf/all/rp_filter").trim()).isEqualTo("1");
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void whenStatusHostMovesToNodeBTheSteeringFollows(String mode) {
    topo = SteeringTopology.create(2);
    applyBoth(mode, SteeringFiles.web(NODE_A));
    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);
    expectUdp("pod-a", EXTERNAL6, "ext-a", LB_IP6);

    applyBoth(mode, SteeringFiles.web(NODE_B));

    expectUdp("pod-a", EXTERNAL, "ext-b", LB_IP);
    expectUdp("pod-a", EXTERNAL6, "ext-b", LB_IP6);
    expectTcp("pod-a", EXTERNAL, "ext-b", LB_IP);
    expectUdp("pod-b", EXTERNAL, "ext-b", LB_IP);
    expectUdp("pod-b", EXTERNAL6, "ext-b", LB_IP6);
    // node-b is the host now: it sends nothing over the device, it only receives
    assertThat(routes(NODE_B, "-4", 7000)).isBlank();
    assertThat(ip(NODE_A, "route", "show", "table", "7000")).contains("dst " + NODE_B_IP);
    assertThat(ip(NODE_A, "-6", "route", "show", "table", "7000")).contains("dst " + NODE_B_IP6);
    expectPodB2Untouched();
  }

  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void deletingTheEgressServiceLeavesNoSteeringStateOnEitherNode(String mode) {
    topo = SteeringTopology.create(2);
    applyBoth(mode, SteeringFiles.web(NODE_A));
    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);

    applyBoth(mode, SteeringFiles.nodesOnly());

    for (String node : new String[] {NODE_A, NODE_B}) {
      assertThat(topo.ns(node).tryExec("ip", "link", "show", "egress-vx").exitCode()).as("device on " + node).isNotZero();
      assertThat(ip(node, "rule", "show")).as("rules on " + node).doesNotContain("proto 201");
      assertThat(ip(node, "-6", "rule", "show")).as("rules on " + node).doesNotContain("proto 201");
      for (String family : new String[] {"-4", "-6"}) {
        assertThat(topo.ns(node).json("ip", "-j", family, "route", "show", "table", "all").toString())
            .as("routes on " + node).doesNotContain("egress-vx").doesNotContain("\"protocol\":\"201\"");
      }
    }
    // back to the pod network's own way out: node-b's uplink, masqueraded
    expectUdp("pod-b", EXTERNAL, "ext-b", NODE_B_UPLINK);
    expectUdp("pod-b", EXTERNAL6, "ext-b", NODE_B_UPLINK6);
  }

  @Test
  void applyForNodeBWithStatusHostNodeAProgramsNodeBsSideAndSaysSo() {
    topo = SteeringTopology.create(2);
    Path file = SteeringFiles.write(tmp.resolve("f"), SteeringFiles.web(NODE_A));

    InProcess.Result b = apply("source", file, NODE_B);

    assertThat(b.out()).contains("default/web: configured: steers 2 endpoint(s) of this node to host node-a ("
        + NODE_A_IP + ", " + NODE_A_IP6 + ") over egress-vx");
    assertThat(b.out()).contains("+ rule 5000: from " + POD_B + " lookup 7000");
    assertThat(b.out()).contains("+ link egress-vx type vxlan external gpe dstport 4799");
    assertThat(b.out()).contains("encap ip id 1 dst " + NODE_A_IP + " csum");
    JsonNode route = topo.ns(NODE_B).json("ip", "-j", "route", "show", "table", "7000").get(0);
    assertThat(route.path("dev").asText()).isEqualTo("egress-vx");
    assertThat(ip(NODE_B, "route", "show", "table", "7000")).contains("encap ip id 1 src 0.0.0.0 dst " + NODE_A_IP);
    assertThat(ip(NODE_B, "-6", "route", "show", "table", "7000")).contains("dst " + NODE_A_IP6);
    assertThat(ip(NODE_B, "rule", "show")).contains("from " + POD_B + " lookup 7000 proto 201");
    assertThat(ip(NODE_B, "-6", "rule", "show")).contains("from " + POD_B6 + " lookup 7000 proto 201");

    InProcess.Result a = apply("source", file, NODE_A);
    assertThat(a.out()).contains("host of this service: SNAT of 4 endpoint(s)")
        .contains("2 endpoint(s) on other nodes arrive steered over egress-vx");
    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);

    // applying again changes nothing
    assertThat(apply("source", file, NODE_B).out()).contains("applied 0 change(s)");

    // status says which endpoint goes to which host, in text and JSON
    InProcess.Result status = InProcess.run("status", "--netns", topo.ns(NODE_B).name(), "--objects", file.toString(),
        "--node", NODE_B);
    assertThat(status.out()).contains("steering device egress-vx: present, mtu 1444, dstport 4799, 2 steering route(s)")
        .contains("steered " + POD_B + " to " + NODE_A_IP + " (host node-a)")
        .contains("steered " + POD_B6 + " to " + NODE_A_IP6 + " (host node-a)");
    JsonNode json = parse(InProcess.run("status", "--netns", topo.ns(NODE_B).name(), "--objects", file.toString(), "--node",
            NODE_B, "-o", "json").out());
    assertThat(json.path("steeringDevice").path("ours").asBoolean()).isTrue();
    assertThat(json.path("services").toString()).contains("\"source\":\"" + POD_B + "\",\"table\":7000,\"hostAddress\":\""
        + NODE_A_IP + "\",\"host\":\"node-a\"");

    // cleanup removes the device and, with it, the steering routes; the rules go too
    assertThat(InProcess.run("cleanup", "--netns", topo.ns(NODE_B).name()).out()).contains("- link egress-vx");
    assertThat(topo.ns(NODE_B).tryExec("ip", "link", "show", "egress-vx").exitCode()).isNotZero();
    assertThat(routes(NODE_B, "-4", 7000)).isBlank();
    assertThat(ip(NODE_B, "rule", "show")).doesNotContain("proto 201");
  }

  static JsonNode parse(String text) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().readTree(text);
    } catch (java.io.IOException e) {
      throw new IllegalStateException(text, e);
    }
  }

  @Test
  void aHostWithoutAnIpv6InternalIpGetsTheIpv4EndpointsAndTheIpv6OnesAreReported() {
    topo = SteeringTopology.create(2);
    Cluster c = new Cluster(true, NODE_A, false);
    InProcess.Result b = apply("source", SteeringFiles.write(tmp.resolve("f"), c), NODE_B);
    apply("source", SteeringFiles.write(tmp.resolve("f"), c), NODE_A);

    assertThat(b.out()).contains("steers 1 endpoint(s) of this node to host node-a (" + NODE_A_IP + ")")
        .contains("skipped " + POD_B6 + ": host node-a has no IPv6 InternalIP: not steered (never guessed)");
    assertThat(routes(NODE_B, "-6", 7000)).isBlank();
    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);
    // IPv6 leaves as it did before the agent: node-b's uplink, masqueraded by the CNI
    expectUdp("pod-b", EXTERNAL6, "ext-b", NODE_B_UPLINK6);
  }

  @Test
  void aDeviceNamedEgressVxThatIsNotOursIsLeftAloneAndTheRefusalReported() {
    topo = SteeringTopology.create(2);
    topo.ns(NODE_B).exec("ip", "link", "add", "egress-vx", "type", "vxlan", "id", "9", "dstport", "4790");
    InProcess.Result b = apply("source", SteeringFiles.write(tmp.resolve("f"), SteeringFiles.web(NODE_A)), NODE_B, 2);

    assertThat(b.err()).contains("a device named egress-vx exists that the agent did not create");
    assertThat(ip(NODE_B, "-d", "link", "show", "egress-vx")).contains("id 9").contains("dstport 4790")
        .doesNotContain("alias");
    assertThat(ip(NODE_B, "route", "show", "table", "all")).doesNotContain("encap");
  }

  @Test
  void aDeletedDeviceIsRecreatedByTheNextApply() {
    topo = SteeringTopology.create(2);
    applyBoth("source", SteeringFiles.web(NODE_A));
    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);

    topo.ns(NODE_B).exec("ip", "link", "del", "egress-vx");
    InProcess.Result b = apply("source", SteeringFiles.write(tmp.resolve("again"), SteeringFiles.web(NODE_A)), NODE_B);

    assertThat(b.out()).contains("+ link egress-vx").contains("+ route default encap ip id 1 dst " + NODE_A_IP);
    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);
  }

  /**
   * Someone deletes the device (or it is being re-created): the steering routes go with it, and the pod's rule finds
   * nothing in its table. Its packets must not fall through to the node's own route and leave with the node's
   * address: they are dropped until the device is back.
   */
  @ParameterizedTest(name = "rule mode {0}")
  @MethodSource("ruleModes")
  void aSteeredPodsPacketsAreDroppedNotLeakedWhileTheDeviceIsGone(String mode) {
    topo = SteeringTopology.create(2);
    applyBoth(mode, SteeringFiles.web(NODE_A));
    expectUdp("pod-b", EXTERNAL, "ext-a", LB_IP);
    expectUdp("pod-b", EXTERNAL6, "ext-a", LB_IP6);

    topo.ns(NODE_B).exec("ip", "link", "del", "egress-vx");

    assertThat(topo.udp("pod-b", EXTERNAL).seen()).as("pod-b -> %s without the device", EXTERNAL).isEmpty();
    assertThat(topo.udp("pod-b", EXTERNAL6).seen()).as("pod-b -> %s without the device", EXTERNAL6).isEmpty();
    expectPodB2Untouched();
  }

  // ---- how the cases drive the agent and look at packets ----------------------------------------

  void applyBoth(String mode, Cluster c) {
    Path file = SteeringFiles.write(tmp.resolve("step-" + (++step)), c);
    apply(mode, file, NODE_A);
    apply(mode, file, NODE_B);
  }

  InProcess.Result apply(String mode, Path file, String node) {
    return apply(mode, file, node, 0);
  }

  InProcess.Result apply(String mode, Path file, String node, int expectedExit) {
    return agent(expectedExit, "apply", "--objects", file.toString(), "--node", node,
        "--netns", topo.ns(node).name(), "--service-cidr", "172.30.0.0/16,fd02::/112", "--rule-mode", mode);
  }

  /** {@code ip [-6] route show table N}; empty when the kernel has no such table (yet or any more). */
  String routes(String node, String family, int table) {
    var r = topo.ns(node).tryExec("ip", family, "route", "show", "table", Integer.toString(table));
    return r.exitCode() == 0 ? r.stdout() : "";
  }

  String ip(String node, String... args) {
    String[] cmd = new String[args.length + 1];
    cmd[0] = "ip";
    System.arraycopy(args, 0, cmd, 1, args.length);
    return topo.ns(node).exec(cmd);
  }

  /** A 1 MB transfer completes: full-size segments cross the device (its MTU leaves room for the encapsulation). */
  @Override
  void expectTcp(String from, String dst, String where, String source) {
    eventually(patience().multipliedBy(2), Duration.ofMillis(100), () -> {
      Probe p = topo.tcp(from, dst, ONE_MB);
      assertThat(p.seen()).as("tcp %s -> %s: who saw it", from, dst)
          .containsExactly(new Seen(where, "tcp", source, ONE_MB));
      assertThat(p.reply()).as("tcp %s -> %s: the answer", from, dst)
          .contains("saw " + source + " at " + where + " bytes " + ONE_MB);
    });
  }

  /** pod-b2 is in no service: it leaves by node-b's own uplink, masqueraded by the CNI, whatever the agent does. */
  void expectPodB2Untouched() {
    expectUdp("pod-b2", EXTERNAL, "ext-b", NODE_B_UPLINK);
    expectUdp("pod-b2", EXTERNAL6, "ext-b", NODE_B_UPLINK6);
  }
}

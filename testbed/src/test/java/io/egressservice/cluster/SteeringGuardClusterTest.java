package io.egressservice.cluster;

import static io.egressservice.cluster.SteeringCluster.LB_IPS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Namespace;
import io.egressservice.testbed.Traffic;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Who may use the steering tunnel, tried as an attacker would with real packets in the namespace cluster
 * ({@link Cluster#standard()}, the real agent on every node). Service {@code web} is hosted by node-a (its LB IP
 * leaves by ext-a2); pod-b1 and pod-c1 are steered there by their nodes; pod-b2 never opted in. Forged VXLAN-GPE
 * ({@link Forgery}: the attacker's own device, the agent's encapsulation) and spoofed sources must not leave with the
 * LB IP, must not reach pods or the node's own services, and each refusal is counted in the guard table; a steered
 * pod still leaves with the LB IP over UDP, TCP and IPv6. {@link MarkRuleModeClusterTest} and
 * {@link SourceRuleModeClusterTest} run it in each rule mode, after {@link SteeringClusterTest} on the same cluster.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
abstract class SteeringGuardClusterTest {
  static final String GUARD = "egress_service_agent_guard";
  static final String FORGED_OUTSIDER = "203.0.113.99";
  /** Attempts per forgery: each is a new datagram (a new conntrack entry). */
  static final int ATTEMPTS = 3;

  SteeringCluster steering;
  Cluster cluster;

  /** The running cluster of the enclosing class, without any EgressService. */
  abstract SteeringCluster shared();

  @BeforeAll
  void takeTheClusterAndCreateWeb() {
    steering = shared();
    cluster = steering.cluster();
    steering.createWebOn("node-a");
    for (IpFamily f : IpFamily.values()) {
      expect("udp", "pod-b1", Addresses.external(f), new Seen("ext-a2", "udp", LB_IPS.get(f.ordinal())));
    }
  }

  // ---- controls ----------------------------------------------------------------------------------

  @Test
  @Order(1)
  void steeredPodsStillLeaveWithTheLbIpOverUdpTcpAndIpv6() {
    for (IpFamily f : IpFamily.values()) {
      String lbIp = LB_IPS.get(f.ordinal());
      steering.expectEndpointsLeaveThrough("ext-a2", f);
      Traffic.Transfer t = cluster.traffic().transfer("pod-b1", Addresses.external(f), 1 << 20, Duration.ofSeconds(20));
      assertThat(t.seen()).as("1 MiB from pod-b1 over %s", f).containsExactly(new Seen("ext-a2", "tcp", lbIp));
      assertThat(t.complete()).as("1 MiB from pod-b1 over %s completes (answer %s)", f, t.reply()).isTrue();
      // a pod that did not opt in is untouched, and pod-to-pod traffic of a steered pod keeps its address
      Cluster.Node b = cluster.node("node-b");
      expect("udp", "pod-b2", Addresses.external(f), new Seen("ext-b1", "udp", b.uplink(1).nodeIp(f)));
      expect("udp", "pod-b1", cluster.pod("pod-c1").ip(f), new Seen("pod-c1", "udp", cluster.pod("pod-b1").ip(f)));
    }
  }

  // ---- only nodes may use the steering port ---------------------------------------------------------

  /** The lan namespace is a host on the node network (the control plane's address), not a Node. */
  @Test
  @Order(2)
  void steeringPortRefusesNonNodeSenders() {
    Namespace lan = cluster.netns("lan");
    String nodeA = cluster.node("node-a").ip(IpFamily.V4);
    List<String> leaks = new ArrayList<>();
    long before = counter("node-a", "port");
    for (String pod : List.of("pod-b1", "pod-a1")) {
      try (Forgery f = Forgery.tunnel(lan, cluster.pod(pod).ip(IpFamily.V4), Addresses.EXTERNAL_V4, nodeA)) {
        sendAndCollectLeaks("lan", "lan as " + pod + " through node-a", leaks);
      }
    }
    // the port over IPv6 too (an outer IPv6 header, as steering of IPv6 endpoints sends)
    try (Forgery f = Forgery.tunnel(lan, cluster.pod("pod-b1").ip(IpFamily.V4), Addresses.EXTERNAL_V4,
        cluster.node("node-a").ip(IpFamily.V6))) {
      sendAndCollectLeaks("lan", "lan as pod-b1 through node-a's IPv6 address", leaks);
    }
    assertThat(leaks).as("forged datagrams that left the cluster").isEmpty();
    assertThat(counter("node-a", "port")).as("node-a counted the refused datagrams").isGreaterThan(before);
    assertThat(cluster.node("node-a").agent().metrics())
        .as("node-a's agent exports the guard's drops by reason")
        .containsPattern("(?m)^egress_service_agent_guard_dropped_packets_total\\{reason=\"port\"} [1-9]");
  }

  /** ext-a1 is the router behind node-a's main uplink: it sends to node-a's address on that uplink. */
  @Test
  @Order(3)
  void steeringPortRefusesTheRouterOnAnUplink() {
    Cluster.Node a = cluster.node("node-a");
    long before = counter("node-a", "port");
    try (Forgery f = Forgery.tunnel(cluster.netns("ext-a1"), cluster.pod("pod-b1").ip(IpFamily.V4),
        Addresses.EXTERNAL_V4, a.uplink(1).nodeIp(IpFamily.V4))) {
      List<String> leaks = new ArrayList<>();
      sendAndCollectLeaks("ext-a1", "ext-a1 as pod-b1 through node-a's uplink", leaks);
      assertThat(leaks).as("forged datagrams that left the cluster").isEmpty();
    }
    assertThat(counter("node-a", "port")).isGreaterThan(before);
  }

  /**
   * pod-b2 (not opted in) sends as pod-b1 to its own node, and to node-a: there its datagram would arrive
   * masqueraded to node-b's address, which node-a trusts; node-b drops it before.
   */
  @Test
  @Order(4)
  void podsCannotReachAnySteeringPort() {
    Namespace pod = cluster.netns("pod-b2");
    String forged = cluster.pod("pod-b1").ip(IpFamily.V4);
    List<String> leaks = new ArrayList<>();
    List<Long> counted = new ArrayList<>();
    for (String target : List.of("node-b", "node-a")) {
      for (IpFamily outer : IpFamily.values()) {
        long before = counter("node-b", "port");
        try (Forgery f = Forgery.tunnel(pod, forged, Addresses.EXTERNAL_V4, cluster.node(target).ip(outer))) {
          sendAndCollectLeaks("pod-b2", "pod-b2 as pod-b1 through " + target + " over " + outer, leaks);
        }
        counted.add(counter("node-b", "port") - before);
      }
    }
    assertThat(leaks).as("forged datagrams that left the cluster").isEmpty();
    assertThat(counted).as("node-b refused pod-b2's datagrams to node-b, to node-a (IPv4, IPv6 outer)")
        .allMatch(n -> n > 0);
  }

  /** An outsider cannot put packets with forged sources into the pod network through the port either. */
  @Test
  @Order(5)
  void steeringPortRefusesForgedPacketsIntoThePodNetwork() {
    try (Forgery f = Forgery.tunnel(cluster.netns("lan"), FORGED_OUTSIDER, cluster.pod("pod-b1").ip(IpFamily.V4),
        cluster.node("node-b").ip(IpFamily.V4))) {
      for (int i = 0; i < ATTEMPTS; i++) {
        Probe p = cluster.traffic().udp("lan", cluster.pod("pod-b1").ip(IpFamily.V4));
        assertThat(p.seen()).as("pod-b1 saw a datagram from %s", FORGED_OUTSIDER).isEmpty();
      }
    }
  }

  // ---- only steered endpoints leave through the tunnel ---------------------------------------------

  /**
   * Even a Node (here a process on node-c using node-c's own device: a host-network pod is the node) gets through
   * the tunnel only steered endpoints leaving the cluster: not to a pod, not to node-a's own services. Its own address
   * inside is no endpoint it steers, so the port refuses it already ({@code forged}); a steered endpoint's address
   * to an in-cluster destination would be the tunnel's ({@code tunnel}).
   */
  @Test
  @Order(6)
  void tunnelCarriesOnlySteeredEndpointsOutOfTheCluster() throws Exception {
    Namespace c = cluster.netns("node-c");
    String nodeC = cluster.node("node-c").ip(IpFamily.V4);
    String nodeA = cluster.node("node-a").ip(IpFamily.V4);
    String podA1 = cluster.pod("pod-a1").ip(IpFamily.V4);
    long before = counter("node-a", "tunnel") + counter("node-a", "forged");
    List<String> reached = new ArrayList<>();
    try (Forgery f = Forgery.fromNode(c, nodeC, podA1, nodeA)) {
      for (int i = 0; i < ATTEMPTS; i++) {
        reached.addAll(cluster.traffic().udp("node-c", podA1).seen().stream().map(Seen::toString).toList());
      }
    }
    // node-a's own service, on its address on uplink 1 (a wildcard socket in node-a's namespace)
    String service = cluster.node("node-a").uplink(1).nodeIp(IpFamily.V4);
    DatagramSocket socket = cluster.traffic().thread("node-a")
        .call(() -> new DatagramSocket(new InetSocketAddress(InetAddress.getByName("0.0.0.0"), Traffic.ECHO_PORT)));
    try (socket; Forgery f = Forgery.fromNode(c, nodeC, service, nodeA)) {
      socket.setSoTimeout(300);
      List<String> got = new ArrayList<>();
      for (int i = 0; i < ATTEMPTS; i++) {
        cluster.traffic().udp("node-c", service);
        try {
          DatagramPacket p = new DatagramPacket(new byte[512], 512);
          socket.receive(p);
          got.add(p.getAddress().getHostAddress());
        } catch (SocketTimeoutException e) {
          // nothing arrived: as it should be
        }
      }
      got.forEach(g -> reached.add("node-a's own service from " + g));
    }
    assertThat(reached).as("what node-c's datagrams reached out of node-a's egress-vx").isEmpty();
    // node-c's own address is no source node-c steers: refused at the port (forged) before it reaches egress-vx
    assertThat(counter("node-a", "tunnel") + counter("node-a", "forged"))
        .as("node-a counted what node-c sent through the tunnel").isGreaterThan(before);
    steeredPodsStillLeaveWithTheLbIpOverUdpTcpAndIpv6();
  }

  // ---- opted-in sources are not spoofable ---------------------------------------------------------

  /**
   * From the node network (loose rp_filter on the nodes, as systemd sets it), plain packets with an opted-in pod's
   * address: pod-a1's through its own node-a (the host), pod-b1's through node-a (where it is steered in, so it
   * must come out of egress-vx) and through node-b (which would steer it to node-a).
   */
  @Test
  @Order(7)
  void spoofedOptedInSourceFromNodeNetworkIsDropped() {
    Namespace lan = cluster.netns("lan");
    record Case(String pod, String through) {}
    List<String> leaks = new ArrayList<>();
    List<String> uncounted = new ArrayList<>();
    for (Case k : List.of(new Case("pod-a1", "node-a"), new Case("pod-b1", "node-a"), new Case("pod-b1", "node-b"))) {
      long before = counter(k.through(), "spoofed");
      try (Forgery f = Forgery.spoof(lan, cluster.pod(k.pod()).ip(IpFamily.V4), Addresses.EXTERNAL_V4,
          cluster.node(k.through()).ip(IpFamily.V4))) {
        sendAndCollectLeaks("lan", k.pod() + "'s address through " + k.through(), leaks);
      }
      if (counter(k.through(), "spoofed") <= before) {
        uncounted.add(k.toString());
      }
    }
    assertThat(leaks).as("spoofed packets that left the cluster").isEmpty();
    assertThat(uncounted).as("cases the guard did not count").isEmpty();
    steeredPodsStillLeaveWithTheLbIpOverUdpTcpAndIpv6();
  }

  /** IPv6 too: pod-a1's IPv6 address from the node network through node-a. */
  @Test
  @Order(8)
  void spoofedOptedInIpv6SourceFromNodeNetworkIsDropped() {
    try (Forgery f = Forgery.spoof(cluster.netns("lan"), cluster.pod("pod-a1").ip(IpFamily.V6), Addresses.EXTERNAL_V6,
        cluster.node("node-a").ip(IpFamily.V6))) {
      for (int i = 0; i < ATTEMPTS; i++) {
        Probe p = cluster.traffic().udp("lan", Addresses.EXTERNAL_V6);
        assertThat(p.seen()).as("pod-a1's IPv6 address from the node network: who saw it").isEmpty();
      }
    }
  }

  // ---- an inner source only from the Node it lives on -----------------------------------------------

  /**
   * A host on the node network forges node-c's address as outer source (one-way: no ARP answered, none poisoned)
   * around pod-b1's address, which lives on node-b: refused ({@code forged}), over IPv4 and IPv6. pod-b1's own
   * node still steers it, and it still leaves with the LB IP.
   */
  @Test
  @Order(9)
  void steeringPortRefusesAPodsAddressFromAnotherNodesAddress() {
    long before = counter("node-a", "forged");
    List<String> leaks = forgedFromTheNodeNetwork("node-c", f -> cluster.pod("pod-b1").ip(f), "node-c around pod-b1");
    assertThat(leaks).as("forged datagrams that left the cluster").isEmpty();
    assertThat(counter("node-a", "forged")).as("node-a counted them as forged").isGreaterThanOrEqualTo(before + 2);
    for (IpFamily f : IpFamily.values()) {
      expect("udp", "pod-b1", Addresses.external(f), new Seen("ext-a2", "udp", LB_IPS.get(f.ordinal())));
    }
  }

  /**
   * The LB IP as inner source from a Node's address while no move is planned (no Node sends it then): refused. It
   * used to pass, and leave through node-a's main uplink (no SNAT for it, no rule: the main table).
   */
  @Test
  @Order(10)
  void steeringPortRefusesTheLbIpAsInnerSourceWhenNoMoveIsPlanned() {
    long before = counter("node-a", "forged");
    List<String> leaks = forgedFromTheNodeNetwork("node-b", f -> LB_IPS.get(f.ordinal()), "node-b around the LB IP");
    assertThat(leaks).as("forged datagrams that left the cluster").isEmpty();
    assertThat(counter("node-a", "forged")).isGreaterThanOrEqualTo(before + 2);
  }

  /**
   * A datagram arriving on a device that does not reach the other Nodes (lo: a process on node-a sends to node-a's
   * own address, its outer source rewritten to node-b's on the way out) carries a pair the plan knows, pod-b1 from
   * node-b: refused ({@code port}). On Linux 6.15 and later nft's fib lookup is skipped for loopback, so the
   * reverse-path rule alone let it through and pod-b1's address left node-a with the LB IP.
   */
  @Test
  @Order(11)
  void steeringPortRefusesDatagramsOnDevicesThatDoNotReachTheNodes() throws Exception {
    Namespace a = cluster.netns("node-a");
    String nodeA = cluster.node("node-a").ip(IpFamily.V4);
    String table = "esa_forgery";
    long before = counter("node-a", "port");
    List<String> tokens = new ArrayList<>();
    a.exec("nft", "add", "table", "ip", table);
    try {
      a.exec("nft", "add", "chain", "ip", table, "out", "{ type filter hook output priority 0 ; }");
      a.exec("nft", "add", "rule", "ip", table, "out", "ip", "daddr", nodeA, "udp", "dport", "4799", "ip", "saddr",
          "set", cluster.node("node-b").ip(IpFamily.V4));
      for (int i = 0; i < ATTEMPTS; i++) {
        String token = java.util.UUID.randomUUID().toString();
        tokens.add(token);
        byte[] d = Forgery.gpeDatagram(cluster.pod("pod-b1").ip(IpFamily.V4), Addresses.EXTERNAL_V4,
            Traffic.ECHO_PORT, token.getBytes(java.nio.charset.StandardCharsets.UTF_8));
        cluster.traffic().thread("node-a").call(() -> {
          try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(nodeA), 0))) {
            s.send(new DatagramPacket(d, d.length, InetAddress.getByName(nodeA), 4799));
          }
          return null;
        });
      }
      await().atMost(Duration.ofSeconds(3)).until(() -> counter("node-a", "port") >= before + ATTEMPTS
          || tokens.stream().anyMatch(t -> !cluster.traffic().seen(t).isEmpty()));
    } finally {
      a.tryExec("nft", "delete", "table", "ip", table);
    }
    assertThat(tokens.stream().flatMap(t -> cluster.traffic().seen(t).stream()).toList())
        .as("what the external routers saw of datagrams that came in over lo").isEmpty();
    assertThat(counter("node-a", "port")).isGreaterThanOrEqualTo(before + ATTEMPTS);
  }

  // ---- helpers ------------------------------------------------------------------------------------

  /**
   * From lan (a host on the node network), VXLAN-GPE to node-a with {@code node}'s address as outer source around
   * {@code inner} of each family, to the external host: what left the cluster, as lines.
   */
  List<String> forgedFromTheNodeNetwork(String node, java.util.function.Function<IpFamily, String> inner, String what) {
    List<String> leaks = new ArrayList<>();
    for (IpFamily f : IpFamily.values()) {
      try (Forgery g = Forgery.tunnelFrom(cluster.netns("lan"), cluster.node(node).ip(f), inner.apply(f),
          Addresses.external(f), cluster.node("node-a").ip(f))) {
        collectLeaks("lan", Addresses.external(f), "lan as " + what + " over " + f, leaks);
      }
    }
    return leaks;
  }

  /** As {@link #sendAndCollectLeaks}, to {@code destination}. */
  void collectLeaks(String from, String destination, String what, List<String> leaks) {
    for (int i = 0; i < ATTEMPTS; i++) {
      Probe p = cluster.traffic().udp(from, destination);
      if (!p.seen().isEmpty()) {
        leaks.add(what + ": " + p.seen());
        return;
      }
    }
  }

  /**
   * What the external routers saw of the datagrams {@code from} sends to the external host (nothing, when refused),
   * as lines for {@code leaks}: every case of a test is tried before it fails, so each leak shows.
   */
  void sendAndCollectLeaks(String from, String what, List<String> leaks) {
    collectLeaks(from, Addresses.EXTERNAL_V4, what, leaks);
  }

  /** Packets the guard table's counter {@code name} of {@code node} counted (0 without the table). */
  long counter(String node, String name) {
    Namespace ns = cluster.netns(node);
    if (ns.tryExec("nft", "list", "counter", "inet", GUARD, name).exitCode() != 0) {
      return 0;
    }
    for (JsonNode item : ns.json("nft", "-j", "list", "counter", "inet", GUARD, name).path("nftables")) {
      if (item.has("counter")) {
        return item.path("counter").path("packets").asLong();
      }
    }
    return 0;
  }

  void expect(String protocol, String from, String dst, Seen seen) {
    steering.expect(protocol, from, dst, seen);
  }
}

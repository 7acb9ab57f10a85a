package io.egressservice.datapath;

import java.util.List;

/**
 * Two nodes on a shared node network (a bridge), pods behind each wired as a CNI would, and an
 * external host behind each node's own uplink, in throwaway namespaces ({@code esa-<role>-<random>}),
 * all removed on {@link #close()}:
 *
 * <pre>
 *   pod-a 10.128.0.5 fd10:128::5 ─ node-a ─ eth0 192.168.50.1 fd50::1 ─┐        ext-a (owns 203.0.113.10,
 *                                   └ up 172.16.1.1 fd16:1::1 ─────────┼───────  2001:db8:113::10)
 *                                                                   lan (br0)
 *   pod-b  10.128.1.5 fd10:128:1::5 ─┐                                 │
 *   pod-b2 10.128.1.6 fd10:128:1::6 ─┴ node-b ─ eth0 192.168.50.2 fd50::2 ┘     ext-b (owns the same
 *                                   └ up 172.16.2.1 fd16:2::1 ────────────────  addresses)
 * </pre>
 *
 * <p>As a CNI (Flannel host-gw, Calico without an overlay) would: each node routes the other's pod CIDR
 * over the node network, and masquerades pod traffic that leaves the pod CIDR ({@code table inet cni},
 * {@code srcnat}). Each node's default route is its own uplink; the external hosts route everything back
 * to the node in front of them. Both external hosts own the same addresses, so "which uplink" is "which
 * namespace answered". node-a runs with strict reverse-path filtering ({@code rp_filter=1}) unless asked
 * otherwise; node-b with loose (2): replies to a steered pod come back through the pod network on its
 * node-network interface while its route to the external host says otherwise (see README).
 *
 * <p>ext-a and ext-b run an echo server on UDP and TCP port {@link #PORT}: UDP answers {@code saw <source>
 * at <role>}; TCP reads a token line and then everything to the end of the stream, and answers {@code saw
 * <source> at <role> bytes <n>} (the namespaces, links, echo servers and probes are
 * {@link NamespaceTopology}'s; this class is the wiring).
 */
public final class SteeringTopology extends NamespaceTopology {
  public static final String NODE_A = "node-a";
  public static final String NODE_B = "node-b";
  public static final String NODE_A_IP = "192.168.50.1";
  public static final String NODE_A_IP6 = "fd50::1";
  public static final String NODE_B_IP = "192.168.50.2";
  public static final String NODE_B_IP6 = "fd50::2";
  public static final String POD_A = "10.128.0.5";
  public static final String POD_A6 = "fd10:128::5";
  public static final String POD_B = "10.128.1.5";
  public static final String POD_B6 = "fd10:128:1::5";
  public static final String POD_B2 = "10.128.1.6";
  public static final String POD_B2_6 = "fd10:128:1::6";
  public static final String EXTERNAL = "203.0.113.10";
  public static final String EXTERNAL6 = "2001:db8:113::10";
  public static final String LB_IP = "5.5.5.5";
  public static final String LB_IP6 = "2001:db8:5::5";
  /** What node-b's masquerade makes of its pods' traffic on its uplink. */
  public static final String NODE_B_UPLINK = "172.16.2.1";
  public static final String NODE_B_UPLINK6 = "fd16:2::1";

  private SteeringTopology() {
    super(TcpTalk.STREAM);
  }

  /** Builds everything; on any failure, what was built is removed and the failure rethrown. */
  public static SteeringTopology create(int nodeARpFilter) {
    return built(new SteeringTopology(), t -> t.build(nodeARpFilter));
  }

  private void build(int nodeARpFilter) {
    // Before any interface exists, so every interface inherits it.
    add("lan");
    add(NODE_A, "net.ipv4.conf.all.rp_filter=" + nodeARpFilter, "net.ipv4.conf.default.rp_filter=" + nodeARpFilter,
        "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    add(NODE_B, "net.ipv4.conf.all.rp_filter=2", "net.ipv4.conf.default.rp_filter=2",
        "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    for (String role : List.of("pod-a", "pod-b", "pod-b2")) {
      add(role);
    }
    for (String ext : List.of("ext-a", "ext-b")) {
      add(ext, "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0");
    }

    create("lan", "link add br0 type bridge");
    batch("lan", "link set br0 up");
    link(NODE_A, "eth0", List.of(NODE_A_IP + "/24", NODE_A_IP6 + "/64"), "lan", "pa", List.of());
    link(NODE_B, "eth0", List.of(NODE_B_IP + "/24", NODE_B_IP6 + "/64"), "lan", "pb", List.of());
    batch("lan", "link set pa master br0", "link set pb master br0");
    uplink(NODE_A, "ext-a", "172.16.1", "fd16:1::");
    uplink(NODE_B, "ext-b", "172.16.2", "fd16:2::");
    batch(NODE_A, "route add 10.128.1.0/24 via " + NODE_B_IP, "route add fd10:128:1::/64 via " + NODE_B_IP6);
    batch(NODE_B, "route add 10.128.0.0/24 via " + NODE_A_IP, "route add fd10:128::/64 via " + NODE_A_IP6);
    pod(NODE_A, "p1", "pod-a", List.of("10.128.0.1/32", "fe80::1/64"), POD_A, POD_A6);
    pod(NODE_B, "p1", "pod-b", List.of("10.128.1.1/32", "fe80::1/64"), POD_B, POD_B6);
    pod(NODE_B, "p2", "pod-b2", List.of("10.128.1.1/32", "fe80::1/64"), POD_B2, POD_B2_6);
    for (String node : List.of(NODE_A, NODE_B)) {
      // The CNI's masquerade of pod traffic leaving the pod network, after the agent's chain (srcnat - 10).
      chain(node, "inet cni", "nat", "postrouting", "srcnat",
          "ip saddr 10.128.0.0/16 ip daddr != 10.128.0.0/16 masquerade",
          "ip6 saddr fd10:128::/32 ip6 daddr != fd10:128::/32 masquerade");
    }

    startEcho("ext-a", EXTERNAL, EXTERNAL6);
    startEcho("ext-b", EXTERNAL, EXTERNAL6);
  }

  /** The node's own uplink to the external host in front of it ({@code .1} the node, {@code .2} the host), both ways by default. */
  private void uplink(String node, String ext, String v4, String v6) {
    link(node, "uplink", List.of(v4 + ".1/24", v6 + "1/64"), ext, "eth0", List.of(v4 + ".2/24", v6 + "2/64"));
    batch(node, "route add default via " + v4 + ".2", "route add default via " + v6 + "2");
    owns(ext, EXTERNAL, EXTERNAL6);
    batch(ext, "route add default via " + v4 + ".1", "route add default via " + v6 + "1");
  }

  /**
   * One TCP connection from {@code from} to {@code dst} that sends a token line and {@code bytes} bytes
   * of full-size segments, then waits for the answer (1 s to connect, 10 s for the rest).
   */
  public Probe tcp(String from, String dst, int bytes) {
    return tcp(from, dst, PORT, bytes);
  }
}

package io.egressservice.datapath;

import io.egressservice.testing.Netns;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A node with pods, two uplinks, a second node and an external client, wired with veth pairs in
 * throwaway namespaces (each {@code esa-<role>-<random>}), all removed on {@link #close()}:
 *
 * <pre>
 *  pod1 10.128.0.5/32 ─┐                                 ┌─ up1 172.16.1.2, owns 203.0.113.10 ─ 198.51.100.1 ─┐
 *  pod2 10.128.0.6/32 ─┼─ node (gw 10.128.0.1) ─ up1 ────┘                                                     client
 *  pod3 10.128.0.7/32 ─┘   main: default via up1  ─ up2 ─── up2 172.16.2.2, owns 203.0.113.10 ─ 198.51.101.1 ─┘ 198.51.100.2
 *                          100, 102: default via up2
 *                          101: default via up1
 *                          lan 192.168.1.10/24 ── node2 192.168.1.11/24, owns 10.128.1.5 (a pod on node2)
 * </pre>
 *
 * <p>Both uplinks own the same external address 203.0.113.10, so "which uplink" is "which namespace
 * answered". Both route the pod network and the LB IP 5.5.5.5 back to the node; the LB IP is on no
 * interface (SNAT does not need it). The client sends through up1 only; up2 reaches it through its own
 * link (so a reply that the node sends to up2 arrives). Pods have /32 addresses with a default route via
 * 10.128.0.1 on the node's side of their veth, and the node has a /32 route per pod.
 *
 * <p>{@link #udp} and {@link #tcp} send from any namespace, the node's own included. Every namespace
 * except {@code node} and {@code client} runs an echo server on UDP and TCP port
 * {@link #PORT}: it records (token, which namespace, source address seen) and answers
 * {@code saw <source> at <namespace>} (the namespaces, links, echo servers and probes are
 * {@link NamespaceTopology}'s; this class is the wiring).
 */
public final class Topology extends NamespaceTopology {
  public static final String POD1 = "10.128.0.5";
  public static final String POD2 = "10.128.0.6";
  public static final String POD3 = "10.128.0.7";
  public static final String EXTERNAL = "203.0.113.10";
  public static final String LB_IP = "5.5.5.5";
  public static final String LB_IP_2 = "5.5.5.6";
  public static final String NODE_IP = "192.168.1.10";
  public static final String NODE2_IP = "192.168.1.11";
  public static final String NODE2_POD = "10.128.1.5";
  public static final String CLIENT = "198.51.100.2";
  /** The node's uplink address on up1 (not in its Node object: only {@link #NODE_IP} is). */
  public static final String NODE_UPLINK_IP = "172.16.1.1";
  /** The Service port the test's DNAT (standing in for kube-proxy) maps to pod1's {@link #PORT}. */
  public static final int LB_PORT = 80;
  // IPv6 (after enableIpv6()): the same layout with these addresses; uplinks fd00:172:16:1::/64 and fd00:172:16:2::/64.
  public static final String POD1_V6 = "fd00:10:128::5";
  public static final String EXTERNAL_V6 = "2001:db8:203::10";
  public static final String LB_IP_V6 = "5555::5";
  public static final String CLIENT_V6 = "2001:db8:198::2";
  // OVN-Kubernetes' local gateway path (after installOvnLocalGateway()): its ETP=Local masquerade IPs and a pod behind it.
  public static final String OVN_MASQUERADE_V4 = "169.254.169.3";
  public static final String OVN_MASQUERADE_V6 = "fd69::3";
  public static final String LGW_POD = "10.128.0.8";
  public static final String LGW_POD_V6 = "fd00:10:128::8";

  private static final List<String> ROLES = List.of("node", "pod1", "pod2", "pod3", "node2", "up1", "up2", "client");

  /** Whether {@link #installDualStackReplyCounters()} ran: which counters {@link #replyPackets} reads. */
  private boolean dualStackCounters;

  private Topology() {
    super(TcpTalk.LINE);
  }

  /** Builds the whole topology; on any failure, what was built is removed and the failure rethrown. */
  public static Topology create() {
    return built(new Topology(), Topology::build);
  }

  public Netns node() {
    return ns("node");
  }

  private void build() {
    for (String role : ROLES) {
      // Before any interface exists, so every interface inherits it: no reverse-path filtering (the
      // node gets replies on up2 for sources it would route via up1; the client gets replies on either link).
      add(role, "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0");
    }
    for (String router : List.of("node", "up1", "up2")) {
      sysctl(router, "net.ipv4.ip_forward=1");
    }

    pod("node", "p1", "pod1", List.of("10.128.0.1/32"), POD1);
    pod("node", "p2", "pod2", List.of("10.128.0.1/32"), POD2);
    pod("node", "p3", "pod3", List.of("10.128.0.1/32"), POD3);
    link("node", "lan", List.of(NODE_IP + "/24"), "node2", "eth0", List.of(NODE2_IP + "/24"));
    link("node", "up1", List.of("172.16.1.1/24"), "up1", "eth0", List.of("172.16.1.2/24"));
    link("node", "up2", List.of("172.16.2.1/24"), "up2", "eth0", List.of("172.16.2.2/24"));
    link("up1", "toc", List.of("198.51.100.1/24"), "client", "up1", List.of(CLIENT + "/24"));
    link("up2", "toc", List.of("198.51.101.1/24"), "client", "up2", List.of("198.51.101.2/24"));
    batch("node",
        "route add 10.128.1.0/24 via " + NODE2_IP,
        "route add default via 172.16.1.2",
        "route add default via 172.16.2.2 table 100",
        "route add default via 172.16.1.2 table 101",
        "route add default via 172.16.2.2 table 102");
    owns("node2", NODE2_POD);
    batch("node2", "route add default via " + NODE_IP);
    for (String up : List.of("up1", "up2")) {
      String n = up.substring(2);
      owns(up, EXTERNAL);
      batch(up,
          "route add 10.128.0.0/16 via 172.16." + n + ".1",
          "route add " + LB_IP + "/32 via 172.16." + n + ".1",
          "route add " + LB_IP_2 + "/32 via 172.16." + n + ".1");
    }
    batch("up2", "route add 198.51.100.0/24 via 198.51.101.2");
    batch("client", "route add " + LB_IP + "/32 via 198.51.100.1");

    startEcho("pod1", POD1);
    startEcho("pod2", POD2);
    startEcho("pod3", POD3);
    startEcho("node2", NODE2_IP, NODE2_POD);
    startEcho("up1", EXTERNAL);
    startEcho("up2", EXTERNAL);
  }

  // ---- what kube-proxy and the probes add -------------------------------------------------------

  /** The node DNATs {@code LB_IP:LB_PORT} to pod1's echo port, as kube-proxy would (the test's own nft table). */
  public void installLoadBalancerDnat() {
    chain("node", "ip esa_test_kube_proxy", "nat", "prerouting", "dstnat",
        "ip daddr " + LB_IP + " tcp dport " + LB_PORT + " dnat to " + POD1 + ":" + PORT);
  }

  /** In up1 and up2: a counter of forwarded packets coming from the LB's service port (replies to the client). */
  public void installReplyCounters() {
    for (String up : List.of("up1", "up2")) {
      chain(up, "ip esa_test_probe", "filter", "forward", "0",
          "ip saddr " + LB_IP + " tcp sport " + LB_PORT + " counter");
    }
  }

  private static final Pattern PACKETS = Pattern.compile("counter packets (\\d+)");

  /**
   * Packets from the LB's service port forwarded by {@code up} ("up1" or "up2") of one family ("v4" or "v6"):
   * by the counters of {@link #installDualStackReplyCounters()} once installed, else by those of
   * {@link #installReplyCounters()} (IPv4 only).
   */
  public long replyPackets(String up, String family) {
    if (dualStackCounters) {
      return dualStackReplyPackets(up, family);
    }
    if (!family.equals("v4")) {
      throw new IllegalStateException("the single-stack reply counters count IPv4 only");
    }
    Matcher m = PACKETS.matcher(ns(up).exec("nft", "list", "chain", "ip", "esa_test_probe", "forward"));
    if (!m.find()) {
      throw new IllegalStateException("no counter in " + up);
    }
    return Long.parseLong(m.group(1));
  }

  // ---- additions for datapath parity with OVN-Kubernetes --------------------------------

  /** IPv6 on pod1, the node, both uplinks and the client (same shape as IPv4; tables 100-102 too). */
  public void enableIpv6() {
    for (String router : List.of("node", "up1", "up2")) {
      sysctl(router, "net.ipv6.conf.all.forwarding=1");
    }
    podAddress("node", "p1", "pod1", POD1_V6, "fd00:10:128::1/128");
    address("node", "up1", "fd00:172:16:1::1/64");
    address("node", "up2", "fd00:172:16:2::1/64");
    batch("node",
        "route add default via fd00:172:16:1::2",
        "route add default via fd00:172:16:2::2 table 100",
        "route add default via fd00:172:16:1::2 table 101",
        "route add default via fd00:172:16:2::2 table 102");
    for (String up : List.of("up1", "up2")) {
      String n = up.substring(2);
      address(up, "eth0", "fd00:172:16:" + n + "::2/64");
      address(up, "toc", (up.equals("up1") ? "2001:db8:198::1" : "2001:db8:199::1") + "/64");
      owns(up, EXTERNAL_V6);
      batch(up,
          "route add fd00:10:128::/48 via fd00:172:16:" + n + "::1",
          "route add " + LB_IP_V6 + "/128 via fd00:172:16:" + n + "::1");
    }
    batch("up2", "route add 2001:db8:198::/64 via 2001:db8:199::2");
    address("client", "up1", CLIENT_V6 + "/64");
    address("client", "up2", "2001:db8:199::2/64");
    batch("client", "route add " + LB_IP_V6 + "/128 via 2001:db8:198::1");
    startUdpEcho("pod1", POD1_V6);
    startUdpEcho("up1", EXTERNAL_V6);
    startUdpEcho("up2", EXTERNAL_V6);
  }

  /** Strict reverse-path filtering in the node, as many distributions ship it: all, default, the uplinks, the pods' links. */
  public void strictReversePathFilter() {
    List<String> settings = new ArrayList<>();
    for (String conf : List.of("all", "default", "up1", "up2", "p1", "p2", "p3", "lan")) {
      settings.add("net.ipv4.conf." + conf + ".rp_filter=1");
    }
    sysctl("node", settings.toArray(String[]::new));
  }

  private static final Pattern RP_FILTER_DROPS = Pattern.compile("IPReversePathFilter");

  /** The node's count of packets dropped by reverse-path filtering (TcpExt IPReversePathFilter in /proc/net/netstat). */
  public long reversePathDrops() {
    String[] lines = node().exec("cat", "/proc/net/netstat").split("\n");
    for (int i = 0; i + 1 < lines.length; i += 2) {
      String[] names = lines[i].trim().split("\\s+");
      String[] values = lines[i + 1].trim().split("\\s+");
      for (int k = 0; k < names.length && k < values.length; k++) {
        if (RP_FILTER_DROPS.matcher(names[k]).matches()) {
          return Long.parseLong(values[k]);
        }
      }
    }
    throw new IllegalStateException("no IPReversePathFilter counter in the node's /proc/net/netstat");
  }

  /** The client sends to the LB IP(s) through {@code up} ("up1" as built, or "up2"). */
  public void clientReachesLoadBalancerVia(String up) {
    String via = up.equals("up1") ? "198.51.100.1" : "198.51.101.1";
    ns("client").exec("ip", "route", "replace", LB_IP + "/32", "via", via, "src", CLIENT);
  }

  /**
   * A stand-in of OVN-Kubernetes' local gateway path for {@code externalTrafficPolicy: Local}: the node DNATs
   * {@code LB_IP:LB_PORT} (and {@code [LB_IP_V6]:LB_PORT}) to the masquerade IP and {@code nodePort}, routed
   * over {@code mp0} to a namespace {@code ovn} (standing for OVN's gateway router), which DNATs that to
   * the pod {@code lgwpod} (an echo server) behind it. A reply therefore reaches the node from the
   * masquerade IP and the node port, and the node un-DNATs it to the LB IP after its routing decision:
   *
   * <pre>
   *  node mp0 169.254.169.2/29, fd69::2/125 ── ovn 169.254.169.1/29, fd69::1/125 ── lgwpod 10.128.0.8, fd00:10:128::8
   * </pre>
   */
  public void installOvnLocalGateway(int nodePort) {
    for (String role : List.of("ovn", "lgwpod")) {
      add(role, "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0");
    }
    sysctl("ovn", "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    link("node", "mp0", List.of("169.254.169.2/29", "fd69::2/125"), "ovn", "eth0", List.of("169.254.169.1/29", "fd69::1/125"));
    pod("ovn", "pod", "lgwpod", List.of("10.128.0.1/32", "fd00:10:128::1/128"), LGW_POD, LGW_POD_V6);
    batch("ovn", "route add default via 169.254.169.2", "route add default via fd69::2");
    chain("ovn", "inet esa_test_ovn", "nat", "prerouting", "dstnat",
        "ip daddr " + OVN_MASQUERADE_V4 + " tcp dport " + nodePort + " dnat ip to " + LGW_POD + ":" + PORT,
        "ip6 daddr " + OVN_MASQUERADE_V6 + " tcp dport " + nodePort + " dnat ip6 to [" + LGW_POD_V6 + "]:" + PORT);
    chain("node", "inet esa_test_ovn_lgw", "nat", "prerouting", "dstnat",
        "ip daddr " + LB_IP + " tcp dport " + LB_PORT + " dnat ip to " + OVN_MASQUERADE_V4 + ":" + nodePort,
        "ip6 daddr " + LB_IP_V6 + " tcp dport " + LB_PORT + " dnat ip6 to [" + OVN_MASQUERADE_V6 + "]:" + nodePort);
    batch("node",
        "route add " + OVN_MASQUERADE_V4 + "/32 via 169.254.169.1 dev mp0",
        "route add " + OVN_MASQUERADE_V6 + "/128 via fd69::1 dev mp0");
    startEcho("lgwpod", LGW_POD, LGW_POD_V6);
  }

  /** In up1 and up2: counters of forwarded packets from the LB's service port, per family (replies to the client). */
  public void installDualStackReplyCounters() {
    dualStackCounters = true;
    for (String up : List.of("up1", "up2")) {
      chain(up, "inet esa_test_probe_ds", "filter", "forward", "0",
          "ip saddr " + LB_IP + " tcp sport " + LB_PORT + " counter comment \"v4\"",
          "ip6 saddr " + LB_IP_V6 + " tcp sport " + LB_PORT + " counter comment \"v6\"");
    }
  }

  private long dualStackReplyPackets(String up, String family) {
    for (String line : ns(up).exec("nft", "list", "chain", "inet", "esa_test_probe_ds", "forward").split("\n")) {
      Matcher m = PACKETS.matcher(line);
      if (line.contains("\"" + family + "\"") && m.find()) {
        return Long.parseLong(m.group(1));
      }
    }
    throw new IllegalStateException("no " + family + " counter in " + up);
  }

  public Probe tcp(String from, String dst, int port) {
    return tcp(from, dst, port, 0);
  }

  public Probe tcp(String from, String dst) {
    return tcp(from, dst, PORT);
  }
}

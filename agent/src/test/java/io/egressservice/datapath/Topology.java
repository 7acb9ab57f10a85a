package io.egressservice.datapath;

import io.egressservice.netlink.NetnsThread;
import io.egressservice.testing.Netns;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.DatagramPacket;
import java.net.DatagramSocket;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
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
 * {@code saw <source> at <namespace>}.
 */
public final class Topology implements AutoCloseable {
  public static final int PORT = 7000;
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

  /** What an echo server saw: which namespace, which protocol, which source address. */
  public record Seen(String where, String protocol, String source) {
    @Override
    public String toString() {
      return protocol + " from " + source + " at " + where;
    }
  }

  /** One attempt: the reply the client got (empty if none) and what the servers saw of it. */
  public record Probe(Optional<String> reply, List<Seen> seen) {}

  private final List<Netns> all = new ArrayList<>();
  private final Map<String, Netns> byRole = new LinkedHashMap<>();
  private final Map<String, NetnsThread> threads = new LinkedHashMap<>();
  private final List<AutoCloseable> servers = new ArrayList<>();
  private final ConcurrentLinkedQueue<String[]> log = new ConcurrentLinkedQueue<>();

  private Topology() {}

  /** Builds the whole topology; on any failure, what was built is removed and the failure rethrown. */
  public static Topology create() {
    Topology t = new Topology();
    try {
      t.build();
      return t;
    } catch (RuntimeException | Error e) {
      t.close();
      throw e;
    }
  }

  public Netns ns(String role) {
    Netns ns = byRole.get(role);
    if (ns == null) {
      throw new IllegalArgumentException("no namespace " + role);
    }
    return ns;
  }

  public Netns node() {
    return ns("node");
  }

  private void build() {
    for (String role : List.of("node", "pod1", "pod2", "pod3", "node2", "up1", "up2", "client")) {
      Netns ns = Netns.create(role);
      all.add(ns);
      byRole.put(role, ns);
      // Before any interface exists, so every interface inherits it: no reverse-path filtering (the
      // node gets replies on up2 for sources it would route via up1; the client gets replies on either link).
      sysctl(ns, "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0");
    }
    for (String router : List.of("node", "up1", "up2")) {
      sysctl(ns(router), "net.ipv4.ip_forward=1");
    }

    batch("node",
        "link add p1 type veth peer name eth0 netns " + ns("pod1").name(),
        "link add p2 type veth peer name eth0 netns " + ns("pod2").name(),
        "link add p3 type veth peer name eth0 netns " + ns("pod3").name(),
        "link add lan type veth peer name eth0 netns " + ns("node2").name(),
        "link add up1 type veth peer name eth0 netns " + ns("up1").name(),
        "link add up2 type veth peer name eth0 netns " + ns("up2").name(),
        "addr add 10.128.0.1/32 dev p1",
        "addr add 10.128.0.1/32 dev p2",
        "addr add 10.128.0.1/32 dev p3",
        "addr add " + NODE_IP + "/24 dev lan",
        "addr add 172.16.1.1/24 dev up1",
        "addr add 172.16.2.1/24 dev up2",
        "link set p1 up", "link set p2 up", "link set p3 up", "link set lan up", "link set up1 up", "link set up2 up",
        "route add " + POD1 + "/32 dev p1",
        "route add " + POD2 + "/32 dev p2",
        "route add " + POD3 + "/32 dev p3",
        "route add 10.128.1.0/24 via " + NODE2_IP,
        "route add default via 172.16.1.2",
        "route add default via 172.16.2.2 table 100",
        "route add default via 172.16.1.2 table 101",
        "route add default via 172.16.2.2 table 102");
    for (String[] pod : List.of(new String[] {"pod1", POD1}, new String[] {"pod2", POD2}, new String[] {"pod3", POD3})) {
      batch(pod[0],
          "addr add " + pod[1] + "/32 dev eth0",
          "link set eth0 up",
          "route add 10.128.0.1/32 dev eth0",
          "route add default via 10.128.0.1 dev eth0");
    }
    batch("node2",
        "addr add " + NODE2_IP + "/24 dev eth0",
        "addr add " + NODE2_POD + "/32 dev lo",
        "link set eth0 up",
        "route add default via " + NODE_IP);
    batch("up1",
        "link add toc type veth peer name up1 netns " + ns("client").name(),
        "addr add 172.16.1.2/24 dev eth0",
        "addr add " + EXTERNAL + "/32 dev lo",
        "addr add 198.51.100.1/24 dev toc",
        "link set eth0 up", "link set toc up",
        "route add 10.128.0.0/16 via 172.16.1.1",
        "route add " + LB_IP + "/32 via 172.16.1.1",
        "route add " + LB_IP_2 + "/32 via 172.16.1.1");
    batch("up2",
        "link add toc type veth peer name up2 netns " + ns("client").name(),
        "addr add 172.16.2.2/24 dev eth0",
        "addr add " + EXTERNAL + "/32 dev lo",
        "addr add 198.51.101.1/24 dev toc",
        "link set eth0 up", "link set toc up",
        "route add 10.128.0.0/16 via 172.16.2.1",
        "route add " + LB_IP + "/32 via 172.16.2.1",
        "route add " + LB_IP_2 + "/32 via 172.16.2.1",
        "route add 198.51.100.0/24 via 198.51.101.2");
    batch("client",
        "addr add " + CLIENT + "/24 dev up1",
        "addr add 198.51.101.2/24 dev up2",
        "link set up1 up", "link set up2 up",
        "route add " + LB_IP + "/32 via 198.51.100.1");

    for (String role : List.of("node", "pod1", "pod2", "pod3", "node2", "up1", "up2", "client")) {
      threads.put(role, NetnsThread.enter(Optional.of(ns(role).name())));
    }
    startEcho("pod1", POD1);
    startEcho("pod2", POD2);
    startEcho("pod3", POD3);
    startEcho("node2", NODE2_IP, NODE2_POD);
    startEcho("up1", EXTERNAL);
    startEcho("up2", EXTERNAL);
  }

  /** {@code key=value} pairs written to /proc/sys in the namespace (no dependency on procps' sysctl). */
  private static void sysctl(Netns ns, String... settings) {
    StringBuilder script = new StringBuilder("set -e\n");
    for (String kv : settings) {
      String[] p = kv.split("=", 2);
      script.append("echo ").append(p[1]).append(" > /proc/sys/").append(p[0].replace('.', '/')).append('\n');
    }
    ns.execWithInput(script.toString(), "sh");
  }

  private void batch(String role, String... commands) {
    ns(role).execWithInput(String.join("\n", commands) + "\n", "ip", "-batch", "-");
  }

  // ---- what kube-proxy and the probes add -------------------------------------------------------

  /** The node DNATs {@code LB_IP:LB_PORT} to pod1's echo port, as kube-proxy would (the test's own nft table). */
  public void installLoadBalancerDnat() {
    node().execWithInput(
        "table ip esa_test_kube_proxy {\n"
            + "  chain prerouting {\n"
            + "    type nat hook prerouting priority dstnat; policy accept;\n"
            + "    ip daddr " + LB_IP + " tcp dport " + LB_PORT + " dnat to " + POD1 + ":" + PORT + "\n"
            + "  }\n"
            + "}\n",
        "nft", "-f", "-");
  }

  /** In up1 and up2: a counter of forwarded packets coming from the LB's service port (replies to the client). */
  public void installReplyCounters() {
    for (String up : List.of("up1", "up2")) {
      ns(up).execWithInput(
          "table ip esa_test_probe {\n"
              + "  chain forward {\n"
              + "    type filter hook forward priority 0; policy accept;\n"
              + "    ip saddr " + LB_IP + " tcp sport " + LB_PORT + " counter\n"
              + "  }\n"
              + "}\n",
          "nft", "-f", "-");
    }
  }

  private static final Pattern PACKETS = Pattern.compile("counter packets (\\d+)");

  /** Packets counted by {@link #installReplyCounters()} in {@code up1} or {@code up2}. */
  public long replyPackets(String up) {
    Matcher m = PACKETS.matcher(ns(up).exec("nft", "list", "chain", "ip", "esa_test_probe", "forward"));
    if (!m.find()) {
      throw new IllegalStateException("no counter in " + up);
    }
    return Long.parseLong(m.group(1));
  }

  // ---- additions for datapath parity with OVN-Kubernetes (issue 17) --------------------------------

  /** IPv6 on pod1, the node, both uplinks and the client (same shape as IPv4; tables 100-102 too). */
  public void enableIpv6() {
    for (String router : List.of("node", "up1", "up2")) {
      sysctl(ns(router), "net.ipv6.conf.all.forwarding=1");
    }
    batch("node",
        "addr add fd00:10:128::1/128 dev p1 nodad",
        "addr add fd00:172:16:1::1/64 dev up1 nodad",
        "addr add fd00:172:16:2::1/64 dev up2 nodad",
        "route add " + POD1_V6 + "/128 dev p1",
        "route add default via fd00:172:16:1::2",
        "route add default via fd00:172:16:2::2 table 100",
        "route add default via fd00:172:16:1::2 table 101",
        "route add default via fd00:172:16:2::2 table 102");
    batch("pod1",
        "addr add " + POD1_V6 + "/128 dev eth0 nodad",
        "route add fd00:10:128::1/128 dev eth0",
        "route add default via fd00:10:128::1 dev eth0");
    batch("up1",
        "addr add fd00:172:16:1::2/64 dev eth0 nodad",
        "addr add " + EXTERNAL_V6 + "/128 dev lo",
        "addr add 2001:db8:198::1/64 dev toc nodad",
        "route add fd00:10:128::/48 via fd00:172:16:1::1",
        "route add " + LB_IP_V6 + "/128 via fd00:172:16:1::1");
    batch("up2",
        "addr add fd00:172:16:2::2/64 dev eth0 nodad",
        "addr add " + EXTERNAL_V6 + "/128 dev lo",
        "addr add 2001:db8:199::1/64 dev toc nodad",
        "route add fd00:10:128::/48 via fd00:172:16:2::1",
        "route add " + LB_IP_V6 + "/128 via fd00:172:16:2::1",
        "route add 2001:db8:198::/64 via 2001:db8:199::2");
    batch("client",
        "addr add " + CLIENT_V6 + "/64 dev up1 nodad",
        "addr add 2001:db8:199::2/64 dev up2 nodad",
        "route add " + LB_IP_V6 + "/128 via 2001:db8:198::1");
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
    sysctl(node(), settings.toArray(String[]::new));
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
      Netns ns = Netns.create(role);
      all.add(ns);
      byRole.put(role, ns);
      sysctl(ns, "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0");
    }
    sysctl(ns("ovn"), "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    batch("node",
        "link add mp0 type veth peer name eth0 netns " + ns("ovn").name(),
        "addr add 169.254.169.2/29 dev mp0",
        "addr add fd69::2/125 dev mp0 nodad",
        "link set mp0 up");
    batch("ovn",
        "link add pod type veth peer name eth0 netns " + ns("lgwpod").name(),
        "addr add 169.254.169.1/29 dev eth0",
        "addr add fd69::1/125 dev eth0 nodad",
        "addr add 10.128.0.1/32 dev pod",
        "addr add fd00:10:128::1/128 dev pod nodad",
        "link set eth0 up", "link set pod up",
        "route add " + LGW_POD + "/32 dev pod",
        "route add " + LGW_POD_V6 + "/128 dev pod",
        "route add default via 169.254.169.2",
        "route add default via fd69::2");
    batch("lgwpod",
        "addr add " + LGW_POD + "/32 dev eth0",
        "addr add " + LGW_POD_V6 + "/128 dev eth0 nodad",
        "link set eth0 up",
        "route add 10.128.0.1/32 dev eth0",
        "route add default via 10.128.0.1 dev eth0",
        "route add fd00:10:128::1/128 dev eth0",
        "route add default via fd00:10:128::1 dev eth0");
    ns("ovn").execWithInput(
        "table inet esa_test_ovn {\n"
            + "  chain prerouting {\n"
            + "    type nat hook prerouting priority dstnat; policy accept;\n"
            + "    ip daddr " + OVN_MASQUERADE_V4 + " tcp dport " + nodePort + " dnat ip to " + LGW_POD + ":" + PORT + "\n"
            + "    ip6 daddr " + OVN_MASQUERADE_V6 + " tcp dport " + nodePort + " dnat ip6 to [" + LGW_POD_V6 + "]:" + PORT + "\n"
            + "  }\n"
            + "}\n",
        "nft", "-f", "-");
    node().execWithInput(
        "table inet esa_test_ovn_lgw {\n"
            + "  chain prerouting {\n"
            + "    type nat hook prerouting priority dstnat; policy accept;\n"
            + "    ip daddr " + LB_IP + " tcp dport " + LB_PORT + " dnat ip to " + OVN_MASQUERADE_V4 + ":" + nodePort + "\n"
            + "    ip6 daddr " + LB_IP_V6 + " tcp dport " + LB_PORT + " dnat ip6 to [" + OVN_MASQUERADE_V6 + "]:" + nodePort + "\n"
            + "  }\n"
            + "}\n",
        "nft", "-f", "-");
    batch("node",
        "route add " + OVN_MASQUERADE_V4 + "/32 via 169.254.169.1 dev mp0",
        "route add " + OVN_MASQUERADE_V6 + "/128 via fd69::1 dev mp0");
    threads.put("lgwpod", NetnsThread.enter(Optional.of(ns("lgwpod").name())));
    startEcho("lgwpod", LGW_POD, LGW_POD_V6);
  }

  /** In up1 and up2: counters of forwarded packets from the LB's service port, per family (replies to the client). */
  public void installDualStackReplyCounters() {
    for (String up : List.of("up1", "up2")) {
      ns(up).execWithInput(
          "table inet esa_test_probe_ds {\n"
              + "  chain forward {\n"
              + "    type filter hook forward priority 0; policy accept;\n"
              + "    ip saddr " + LB_IP + " tcp sport " + LB_PORT + " counter comment \"v4\"\n"
              + "    ip6 saddr " + LB_IP_V6 + " tcp sport " + LB_PORT + " counter comment \"v6\"\n"
              + "  }\n"
              + "}\n",
          "nft", "-f", "-");
    }
  }

  /** Packets counted by {@link #installDualStackReplyCounters()} in {@code up} for one family ("v4" or "v6"). */
  public long dualStackReplyPackets(String up, String family) {
    for (String line : ns(up).exec("nft", "list", "chain", "inet", "esa_test_probe_ds", "forward").split("\n")) {
      Matcher m = PACKETS.matcher(line);
      if (line.contains("\"" + family + "\"") && m.find()) {
        return Long.parseLong(m.group(1));
      }
    }
    throw new IllegalStateException("no " + family + " counter in " + up);
  }

  // ---- traffic --------------------------------------------------------------------------------

  /** One UDP datagram from {@code from} to {@code dst:port}, waiting up to 300 ms for the answer. */
  public Probe udp(String from, String dst, int port) {
    String token = UUID.randomUUID().toString();
    Optional<String> reply = threads.get(from).call(() -> {
      // A new socket per attempt: a new source port, so a new conntrack entry sees the current NAT rules.
      try (DatagramSocket s = new DatagramSocket()) {
        s.setSoTimeout(300);
        s.connect(InetAddress.getByName(dst), port); // accept the answer only from where the request went
        byte[] out = token.getBytes(StandardCharsets.UTF_8);
        s.send(new DatagramPacket(out, out.length, InetAddress.getByName(dst), port));
        byte[] in = new byte[512];
        DatagramPacket p = new DatagramPacket(in, in.length);
        try {
          s.receive(p);
          return Optional.of(new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8));
        } catch (SocketTimeoutException e) {
          return Optional.empty();
        }
      }
    });
    return new Probe(reply, seen(token));
  }

  public Probe udp(String from, String dst) {
    return udp(from, dst, PORT);
  }

  /** One TCP connection from {@code from} to {@code dst:port} (500 ms to connect, 500 ms for the answer). */
  public Probe tcp(String from, String dst, int port) {
    String token = UUID.randomUUID().toString();
    Optional<String> reply = threads.get(from).call(() -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getByName(dst), port), 500);
        s.setSoTimeout(500);
        OutputStream out = s.getOutputStream();
        out.write((token + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
        String line = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8)).readLine();
        return Optional.ofNullable(line);
      } catch (java.io.IOException e) {
        return Optional.<String>empty();
      }
    });
    return new Probe(reply, seen(token));
  }

  public Probe tcp(String from, String dst) {
    return tcp(from, dst, PORT);
  }

  private List<Seen> seen(String token) {
    List<Seen> out = new ArrayList<>();
    for (String[] e : log) {
      if (e[0].equals(token)) {
        out.add(new Seen(e[1], e[2], e[3]));
      }
    }
    return out;
  }

  /**
   * UDP: one socket per served address, so that an answer leaves from the address the client sent to
   * (a wildcard socket would answer from the routing's preferred source, which conntrack does not match
   * to the request, so SNAT could not be undone). TCP: one wildcard listener.
   */
  private void startEcho(String role, String... addresses) {
    NetnsThread thread = threads.get(role);
    for (String address : addresses) {
      startUdpEcho(role, address);
    }
    ServerSocket tcp = thread.call(() -> {
      ServerSocket s = new ServerSocket();
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(PORT), 16);
      return s;
    });
    servers.add(tcp);
    daemon("echo-tcp-" + role, () -> {
      while (!tcp.isClosed()) {
        try (Socket c = tcp.accept()) {
          c.setSoTimeout(1000);
          String src = text(c.getInetAddress());
          String token = new BufferedReader(new InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8)).readLine();
          log.add(new String[] {String.valueOf(token), role, "tcp", src});
          c.getOutputStream().write(("saw " + src + " at " + role + "\n").getBytes(StandardCharsets.UTF_8));
          c.getOutputStream().flush();
        } catch (java.io.IOException e) {
          // closed, or a client that went away
        }
      }
    });
  }

  private void startUdpEcho(String role, String address) {
    DatagramSocket udp = threads.get(role).call(
        () -> new DatagramSocket(new InetSocketAddress(InetAddress.getByName(address), PORT)));
    servers.add(udp);
    daemon("echo-udp-" + role + "-" + address, () -> serveUdp(role, udp));
  }

  /** An address as the plan and iproute2 print it (IPv6 compressed, without a zone). */
  private static String text(InetAddress a) {
    String raw = a.getHostAddress();
    int zone = raw.indexOf('%');
    return a instanceof java.net.Inet6Address
        ? io.egressservice.ip.IpPrefix.parse(zone < 0 ? raw : raw.substring(0, zone)).addressText() : raw;
  }

  private void serveUdp(String role, DatagramSocket udp) {
    byte[] buf = new byte[512];
    while (!udp.isClosed()) {
      try {
        DatagramPacket p = new DatagramPacket(buf, buf.length);
        udp.receive(p);
        String src = text(p.getAddress());
        log.add(new String[] {new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8), role, "udp", src});
        byte[] out = ("saw " + src + " at " + role).getBytes(StandardCharsets.UTF_8);
        udp.send(new DatagramPacket(out, out.length, p.getSocketAddress()));
      } catch (java.io.IOException e) {
        // closed, or a send that found no route: keep serving until closed
      }
    }
  }

  private static void daemon(String name, Runnable r) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
  }

  /** Servers, then the per-namespace threads, then the namespaces (the veths go with them). */
  @Override
  public void close() {
    for (AutoCloseable s : servers) {
      try {
        s.close();
      } catch (Exception e) {
        // best effort
      }
    }
    threads.values().forEach(NetnsThread::close);
    for (int i = all.size() - 1; i >= 0; i--) {
      all.get(i).close();
    }
  }
}

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
 * <p>Every namespace except {@code node} and {@code client} runs an echo server on UDP and TCP port
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
  /** The Service port the test's DNAT (standing in for kube-proxy) maps to pod1's {@link #PORT}. */
  public static final int LB_PORT = 80;

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

    for (String role : List.of("pod1", "pod2", "pod3", "node2", "up1", "up2", "client")) {
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
      DatagramSocket udp = thread.call(() -> new DatagramSocket(new InetSocketAddress(InetAddress.getByName(address), PORT)));
      servers.add(udp);
      daemon("echo-udp-" + role + "-" + address, () -> serveUdp(role, udp));
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
          String src = c.getInetAddress().getHostAddress();
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

  private void serveUdp(String role, DatagramSocket udp) {
    byte[] buf = new byte[512];
    while (!udp.isClosed()) {
      try {
        DatagramPacket p = new DatagramPacket(buf, buf.length);
        udp.receive(p);
        String src = p.getAddress().getHostAddress();
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

package io.egressservice.datapath;

import io.egressservice.netlink.NetnsThread;
import io.egressservice.testing.Netns;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
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
 * <source> at <role> bytes <n>}.
 */
public final class SteeringTopology implements AutoCloseable {
  public static final int PORT = 7000;
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

  /** What an echo server saw: where, which protocol, which source, and (TCP) how many bytes after the token. */
  public record Seen(String where, String protocol, String source, long bytes) {}

  /** One attempt: the reply the client got (empty if none) and what the servers saw of it. */
  public record Probe(Optional<String> reply, List<Seen> seen) {}

  private final List<Netns> all = new ArrayList<>();
  private final Map<String, Netns> byRole = new LinkedHashMap<>();
  private final Map<String, NetnsThread> threads = new LinkedHashMap<>();
  private final List<AutoCloseable> servers = new ArrayList<>();
  private final ConcurrentLinkedQueue<String[]> log = new ConcurrentLinkedQueue<>();

  private SteeringTopology() {}

  /** Builds everything; on any failure, what was built is removed and the failure rethrown. */
  public static SteeringTopology create(int nodeARpFilter) {
    SteeringTopology t = new SteeringTopology();
    try {
      t.build(nodeARpFilter);
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

  private void build(int nodeARpFilter) {
    for (String role : List.of("lan", NODE_A, NODE_B, "pod-a", "pod-b", "pod-b2", "ext-a", "ext-b")) {
      Netns ns = Netns.create(role.replace("-", ""));
      all.add(ns);
      byRole.put(role, ns);
    }
    // Before any interface exists, so every interface inherits it.
    sysctl(ns(NODE_A), "net.ipv4.conf.all.rp_filter=" + nodeARpFilter, "net.ipv4.conf.default.rp_filter=" + nodeARpFilter,
        "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    sysctl(ns(NODE_B), "net.ipv4.conf.all.rp_filter=2", "net.ipv4.conf.default.rp_filter=2",
        "net.ipv4.ip_forward=1", "net.ipv6.conf.all.forwarding=1");
    for (String ext : List.of("ext-a", "ext-b")) {
      sysctl(ns(ext), "net.ipv4.conf.all.rp_filter=0", "net.ipv4.conf.default.rp_filter=0");
    }

    batch("lan", "link add br0 type bridge", "link set br0 up");
    batch(NODE_A,
        "link add eth0 type veth peer name pa netns " + ns("lan").name(),
        "link add uplink type veth peer name eth0 netns " + ns("ext-a").name(),
        "link add p1 type veth peer name eth0 netns " + ns("pod-a").name());
    batch(NODE_B,
        "link add eth0 type veth peer name pb netns " + ns("lan").name(),
        "link add uplink type veth peer name eth0 netns " + ns("ext-b").name(),
        "link add p1 type veth peer name eth0 netns " + ns("pod-b").name(),
        "link add p2 type veth peer name eth0 netns " + ns("pod-b2").name());
    batch("lan", "link set pa master br0", "link set pb master br0", "link set pa up", "link set pb up");

    node(NODE_A, NODE_A_IP, NODE_A_IP6, "172.16.1", "fd16:1::", NODE_B_IP, NODE_B_IP6, "10.128.1.0/24", "fd10:128:1::/64");
    node(NODE_B, NODE_B_IP, NODE_B_IP6, "172.16.2", "fd16:2::", NODE_A_IP, NODE_A_IP6, "10.128.0.0/24", "fd10:128::/64");
    pod(NODE_A, "p1", "pod-a", POD_A, POD_A6);
    pod(NODE_B, "p1", "pod-b", POD_B, POD_B6);
    pod(NODE_B, "p2", "pod-b2", POD_B2, POD_B2_6);
    external("ext-a", "172.16.1");
    external("ext-b", "172.16.2");

    for (String role : List.of("pod-a", "pod-b", "pod-b2", "ext-a", "ext-b")) {
      threads.put(role, NetnsThread.enter(Optional.of(ns(role).name())));
    }
    startEcho("ext-a");
    startEcho("ext-b");
  }

  private void node(String role, String ip, String ip6, String uplink, String uplink6, String peer, String peer6,
      String peerPods, String peerPods6) {
    batch(role,
        "addr add " + ip + "/24 dev eth0",
        "addr add " + ip6 + "/64 dev eth0 nodad",
        "addr add " + uplink + ".1/24 dev uplink",
        "addr add " + uplink6 + "1/64 dev uplink nodad",
        "link set eth0 up", "link set uplink up", "link set p1 up",
        "route add default via " + uplink + ".2",
        "route add default via " + uplink6 + "2",
        "route add " + peerPods + " via " + peer,
        "route add " + peerPods6 + " via " + peer6);
    // The CNI's masquerade of pod traffic leaving the pod network, after the agent's chain (srcnat - 10).
    ns(role).execWithInput("table inet cni {\n"
        + "  chain postrouting {\n"
        + "    type nat hook postrouting priority srcnat; policy accept;\n"
        + "    ip saddr 10.128.0.0/16 ip daddr != 10.128.0.0/16 masquerade\n"
        + "    ip6 saddr fd10:128::/32 ip6 daddr != fd10:128::/32 masquerade\n"
        + "  }\n"
        + "}\n", "nft", "-f", "-");
  }

  private void pod(String node, String nodeSide, String role, String ip, String ip6) {
    batch(node,
        "link set " + nodeSide + " up",
        "addr add 10.128." + (node.equals(NODE_A) ? "0" : "1") + ".1/32 dev " + nodeSide,
        "addr add fe80::1/64 dev " + nodeSide + " nodad",
        "route add " + ip + "/32 dev " + nodeSide,
        "route add " + ip6 + "/128 dev " + nodeSide);
    String gw = "10.128." + (node.equals(NODE_A) ? "0" : "1") + ".1";
    batch(role,
        "addr add " + ip + "/32 dev eth0",
        "addr add " + ip6 + "/128 dev eth0 nodad",
        "link set eth0 up",
        "route add " + gw + "/32 dev eth0",
        "route add default via " + gw + " dev eth0",
        "route add default via fe80::1 dev eth0");
  }

  private void external(String role, String uplink) {
    String v6 = uplink.equals("172.16.1") ? "fd16:1::" : "fd16:2::";
    batch(role,
        "addr add " + uplink + ".2/24 dev eth0",
        "addr add " + v6 + "2/64 dev eth0 nodad",
        "addr add " + EXTERNAL + "/32 dev lo",
        "addr add " + EXTERNAL6 + "/128 dev lo nodad",
        "link set eth0 up",
        "route add default via " + uplink + ".1",
        "route add default via " + v6 + "1");
  }

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

  // ---- traffic --------------------------------------------------------------------------------

  /** One UDP datagram from {@code from} to {@code dst}, waiting up to 300 ms for the answer. */
  public Probe udp(String from, String dst) {
    String token = UUID.randomUUID().toString();
    Optional<String> reply = threads.get(from).call(() -> {
      try (DatagramSocket s = new DatagramSocket()) {
        s.setSoTimeout(300);
        s.connect(InetAddress.getByName(dst), PORT);
        byte[] out = token.getBytes(StandardCharsets.UTF_8);
        s.send(new DatagramPacket(out, out.length, InetAddress.getByName(dst), PORT));
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

  /**
   * One TCP connection from {@code from} to {@code dst} that sends a token line and {@code bytes} bytes
   * of full-size segments, then waits for the answer (1 s to connect, 10 s for the rest).
   */
  public Probe tcp(String from, String dst, int bytes) {
    String token = UUID.randomUUID().toString();
    Optional<String> reply = threads.get(from).call(() -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getByName(dst), PORT), 1000);
        s.setSoTimeout(10_000);
        OutputStream out = s.getOutputStream();
        out.write((token + "\n").getBytes(StandardCharsets.UTF_8));
        byte[] chunk = new byte[64 * 1024];
        for (int sent = 0; sent < bytes; sent += chunk.length) {
          out.write(chunk, 0, Math.min(chunk.length, bytes - sent));
        }
        out.flush();
        s.shutdownOutput();
        String line = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8)).readLine();
        return Optional.ofNullable(line);
      } catch (IOException e) {
        return Optional.<String>empty();
      }
    });
    return new Probe(reply, seen(token));
  }

  private List<Seen> seen(String token) {
    List<Seen> out = new ArrayList<>();
    for (String[] e : log) {
      if (e[0].equals(token)) {
        out.add(new Seen(e[1], e[2], e[3], Long.parseLong(e[4])));
      }
    }
    return out;
  }

  private void startEcho(String role) {
    NetnsThread thread = threads.get(role);
    for (String address : List.of(EXTERNAL, EXTERNAL6)) {
      // One socket per address: the answer leaves from the address the client sent to (conntrack matches it).
      DatagramSocket udp = thread.call(() -> new DatagramSocket(new InetSocketAddress(InetAddress.getByName(address), PORT)));
      servers.add(udp);
      daemon("steer-echo-udp-" + role, () -> serveUdp(role, udp));
    }
    ServerSocket tcp = thread.call(() -> {
      ServerSocket s = new ServerSocket();
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(PORT), 16);
      return s;
    });
    servers.add(tcp);
    daemon("steer-echo-tcp-" + role, () -> {
      while (!tcp.isClosed()) {
        try (Socket c = tcp.accept()) {
          c.setSoTimeout(10_000);
          String src = normalise(c.getInetAddress());
          InputStream in = c.getInputStream();
          String token = readLine(in);
          long n = 0;
          byte[] buf = new byte[64 * 1024];
          for (int r = in.read(buf); r >= 0; r = in.read(buf)) {
            n += r;
          }
          log.add(new String[] {token, role, "tcp", src, Long.toString(n)});
          c.getOutputStream().write(("saw " + src + " at " + role + " bytes " + n + "\n").getBytes(StandardCharsets.UTF_8));
          c.getOutputStream().flush();
        } catch (IOException e) {
          // closed, or a client that went away
        }
      }
    });
  }

  private static String readLine(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int b = in.read(); b >= 0 && b != '\n'; b = in.read()) {
      sb.append((char) b);
    }
    return sb.toString();
  }

  private void serveUdp(String role, DatagramSocket udp) {
    byte[] buf = new byte[512];
    while (!udp.isClosed()) {
      try {
        DatagramPacket p = new DatagramPacket(buf, buf.length);
        udp.receive(p);
        String src = normalise(p.getAddress());
        log.add(new String[] {new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8), role, "udp", src, "0"});
        byte[] out = ("saw " + src + " at " + role).getBytes(StandardCharsets.UTF_8);
        udp.send(new DatagramPacket(out, out.length, p.getSocketAddress()));
      } catch (IOException e) {
        // closed, or a send that found no route: keep serving until closed
      }
    }
  }

  /** IPv6 in its short form ({@code 2001:db8:5::5}), as the tests write it; IPv4-mapped as IPv4. */
  private static String normalise(InetAddress a) {
    return io.egressservice.ip.IpPrefix.host(a.getAddress().length == 16 && isMapped(a.getAddress())
        ? java.util.Arrays.copyOfRange(a.getAddress(), 12, 16) : a.getAddress()).toString();
  }

  private static boolean isMapped(byte[] b) {
    for (int i = 0; i < 10; i++) {
      if (b[i] != 0) {
        return false;
      }
    }
    return (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff;
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

package io.egressservice.datapath;

import io.egressservice.ip.IpPrefix;
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
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Consumer;

/**
 * What every namespace topology of the datapath tests is made of, in one place: throwaway namespaces by
 * role ({@code esa-<role>-<random>}), links between them, pods wired as a CNI would, echo servers that
 * record who saw what, UDP and TCP probes from any namespace, and the removal of all of it on
 * {@link #close()}. {@link Topology} and {@link SteeringTopology} are only their wiring on top of this.
 *
 * <p>An echo server answers UDP with {@code saw <source> at <role>}. Over TCP it reads a token line and
 * then, as the topology's {@link TcpTalk} says, either answers at once ({@link TcpTalk#LINE}) or reads to
 * the end of the stream first and appends {@code bytes <n>} ({@link TcpTalk#STREAM}).
 */
abstract class NamespaceTopology implements AutoCloseable {
  public static final int PORT = 7000;

  /** How TCP probes and echo servers talk, with the probe's patience for connecting and for the answer. */
  enum TcpTalk {
    /** A token line, answered at once (500 ms to connect, 500 ms for the answer). */
    LINE(500, 500),
    /** A token line and a payload up to the end of the stream, then the answer (1 s to connect, 10 s for the rest). */
    STREAM(1000, 10_000);

    final int connectMillis;
    final int answerMillis;

    TcpTalk(int connectMillis, int answerMillis) {
      this.connectMillis = connectMillis;
      this.answerMillis = answerMillis;
    }
  }

  /** What an echo server saw: where, which protocol, which source, and (TCP streams) how many bytes after the token. */
  public record Seen(String where, String protocol, String source, long bytes) {
    public Seen(String where, String protocol, String source) {
      this(where, protocol, source, 0);
    }

    @Override
    public String toString() {
      return protocol + " from " + source + " at " + where + (bytes == 0 ? "" : " bytes " + bytes);
    }
  }

  /** One attempt: the reply the client got (empty if none) and what the servers saw of it. */
  public record Probe(Optional<String> reply, List<Seen> seen) {}

  private final TcpTalk talk;
  private final List<Netns> all = new ArrayList<>();
  private final Map<String, Netns> byRole = new LinkedHashMap<>();
  private final Map<String, NetnsThread> threads = new LinkedHashMap<>();
  /** Wiring not yet applied, per namespace: the links to create, then the rest (see {@link #flush()}). */
  private final Map<String, List<String>> toCreate = new LinkedHashMap<>();
  private final Map<String, List<String>> toSetUp = new LinkedHashMap<>();
  private final List<AutoCloseable> servers = new ArrayList<>();
  private final ConcurrentLinkedQueue<Sighting> log = new ConcurrentLinkedQueue<>();

  /** A probe's token and what an echo server saw of it. */
  private record Sighting(String token, Seen seen) {}

  NamespaceTopology(TcpTalk talk) {
    this.talk = talk;
  }

  /** Runs {@code build} on {@code topology}; on any failure, what was built is removed and the failure rethrown. */
  static <T extends NamespaceTopology> T built(T topology, Consumer<T> build) {
    try {
      build.accept(topology);
      topology.flush();
      return topology;
    } catch (RuntimeException | Error e) {
      topology.close();
      throw e;
    }
  }

  /** The namespace of {@code role}, with all wiring asked for so far applied. */
  public Netns ns(String role) {
    flush();
    return netns(role);
  }

  private Netns netns(String role) {
    Netns ns = byRole.get(role);
    if (ns == null) {
      throw new IllegalArgumentException("no namespace " + role);
    }
    return ns;
  }

  // ---- wiring ---------------------------------------------------------------------------------
  //
  // Wiring is collected and applied in one `ip -batch` per namespace and phase: an `ip` process costs
  // more than the commands it runs, and a topology per case adds up. Only creating a veth reaches into
  // another namespace, so all links are created first; every other command needs only its own
  // namespace's earlier ones, which its batch keeps in order.

  /** A new namespace for {@code role} (named without the role's dashes), with {@code sysctls} set before any link exists. */
  void add(String role, String... sysctls) {
    flush();
    Netns ns = Netns.create(role.replace("-", ""));
    all.add(ns);
    byRole.put(role, ns);
    if (sysctls.length > 0) {
      sysctl(role, sysctls);
    }
  }

  /** {@code key=value} pairs written to /proc/sys in the namespace (no dependency on procps' sysctl). */
  void sysctl(String role, String... settings) {
    StringBuilder script = new StringBuilder("set -e\n");
    for (String kv : settings) {
      String[] p = kv.split("=", 2);
      script.append("echo ").append(p[1]).append(" > /proc/sys/").append(p[0].replace('.', '/')).append('\n');
    }
    ns(role).execWithInput(script.toString(), "sh");
  }

  /** iproute2 commands for the namespace, applied in order with the rest of the wiring (one {@code ip -batch}). */
  void batch(String role, String... commands) {
    toSetUp.computeIfAbsent(role, r -> new ArrayList<>()).addAll(List.of(commands));
  }

  /** An iproute2 command that creates a device, applied before the wiring that uses it (in any namespace). */
  void create(String role, String command) {
    toCreate.computeIfAbsent(role, r -> new ArrayList<>()).add(command);
  }

  /** Applies the wiring asked for so far: every namespace's links, then every namespace's addresses and routes. */
  synchronized void flush() {
    for (Map<String, List<String>> phase : List.of(toCreate, toSetUp)) {
      for (Map.Entry<String, List<String>> e : phase.entrySet()) {
        netns(e.getKey()).execWithInput(String.join("\n", e.getValue()) + "\n", "ip", "-batch", "-");
      }
      phase.clear();
    }
  }

  /**
   * A table of the test's own ({@code "ip esa_test_probe"}) with one base chain named for its hook
   * ({@code type nat hook prerouting priority dstnat}, policy accept) holding {@code rules}: what kube-proxy,
   * a CNI or a probe would add in the namespace.
   */
  void chain(String role, String table, String type, String hook, String priority, String... rules) {
    StringBuilder ruleset = new StringBuilder("table " + table + " {\n  chain " + hook + " {\n    type " + type
        + " hook " + hook + " priority " + priority + "; policy accept;\n");
    for (String rule : rules) {
      ruleset.append("    ").append(rule).append('\n');
    }
    ns(role).execWithInput(ruleset.append("  }\n}\n").toString(), "nft", "-f", "-");
  }

  /**
   * A veth from {@code a} ({@code aDev} with {@code aAddresses}) to {@code b} ({@code bDev} with
   * {@code bAddresses}), both ends up. Addresses carry their prefix length; IPv6 ones skip duplicate detection.
   */
  void link(String a, String aDev, List<String> aAddresses, String b, String bDev, List<String> bAddresses) {
    create(a, "link add " + aDev + " type veth peer name " + bDev + " netns " + netns(b).name());
    List<String> inA = new ArrayList<>(addresses(aDev, aAddresses));
    inA.add("link set " + aDev + " up");
    batch(a, inA.toArray(String[]::new));
    List<String> inB = new ArrayList<>(addresses(bDev, bAddresses));
    inB.add("link set " + bDev + " up");
    batch(b, inB.toArray(String[]::new));
  }

  /** Addresses (with their prefix length) on {@code dev}, a link that exists already. */
  void address(String role, String dev, String... addresses) {
    batch(role, addresses(dev, List.of(addresses)).toArray(String[]::new));
  }

  /** Addresses on {@code lo}: what a namespace owns without a link of its own for it. */
  void owns(String role, String... addresses) {
    address(role, "lo", Arrays.stream(addresses).map(a -> a + (a.contains(":") ? "/128" : "/32")).toArray(String[]::new));
  }

  /**
   * A pod as a CNI wires it: a veth {@code nodeSide}-{@code eth0} from {@code node} to {@code pod}, then
   * {@link #podAddress} for each of {@code addresses} with the gateway of its family in {@code gateways}.
   */
  void pod(String node, String nodeSide, String pod, List<String> gateways, String... addresses) {
    link(node, nodeSide, List.of(), pod, "eth0", List.of());
    for (String address : addresses) {
      String gateway = gateways.stream().filter(g -> g.contains(":") == address.contains(":")).findFirst()
          .orElseThrow(() -> new IllegalArgumentException("no gateway of the family of " + address));
      podAddress(node, nodeSide, pod, address, gateway);
    }
  }

  /**
   * {@code address} (a host) in {@code pod} behind {@code nodeSide} on {@code node}: the gateway
   * ({@code 10.128.0.1/32}, {@code fe80::1/64}) on the node's side, the node's host route to the pod, and
   * the pod's default route via the gateway (with a host route to it unless it is link-local, which eth0
   * reaches anyway).
   */
  void podAddress(String node, String nodeSide, String pod, String address, String gateway) {
    boolean v6 = address.contains(":");
    String host = address + (v6 ? "/128" : "/32");
    String gatewayAddress = gateway.substring(0, gateway.indexOf('/'));
    batch(node, addresses(nodeSide, List.of(gateway)).get(0), "route add " + host + " dev " + nodeSide);
    List<String> inPod = new ArrayList<>(addresses("eth0", List.of(host)));
    if (!gatewayAddress.startsWith("fe80:")) {
      inPod.add("route add " + gateway + " dev eth0");
    }
    inPod.add("route add default via " + gatewayAddress + " dev eth0");
    batch(pod, inPod.toArray(String[]::new));
  }

  private static List<String> addresses(String dev, List<String> addresses) {
    return addresses.stream().map(a -> "addr add " + a + " dev " + dev + (a.contains(":") ? " nodad" : "")).toList();
  }

  // ---- echo servers ---------------------------------------------------------------------------

  /**
   * UDP: one socket per served address, so that an answer leaves from the address the client sent to
   * (a wildcard socket would answer from the routing's preferred source, which conntrack does not match
   * to the request, so SNAT could not be undone). TCP: one wildcard listener.
   */
  void startEcho(String role, String... addresses) {
    for (String address : addresses) {
      startUdpEcho(role, address);
    }
    ServerSocket tcp = thread(role).call(() -> {
      ServerSocket s = new ServerSocket();
      s.setReuseAddress(true);
      s.bind(new InetSocketAddress(PORT), 16);
      return s;
    });
    servers.add(tcp);
    daemon("echo-tcp-" + role, () -> serveTcp(role, tcp));
  }

  void startUdpEcho(String role, String address) {
    DatagramSocket udp = thread(role).call(
        () -> new DatagramSocket(new InetSocketAddress(InetAddress.getByName(address), PORT)));
    servers.add(udp);
    daemon("echo-udp-" + role + "-" + address, () -> serveUdp(role, udp));
  }

  private void serveTcp(String role, ServerSocket tcp) {
    while (!tcp.isClosed()) {
      try (Socket c = tcp.accept()) {
        c.setSoTimeout(talk == TcpTalk.STREAM ? 10_000 : 1000);
        String src = text(c.getInetAddress());
        InputStream in = c.getInputStream();
        String token = readLine(in);
        long n = 0;
        if (talk == TcpTalk.STREAM) {
          byte[] buf = new byte[64 * 1024];
          for (int r = in.read(buf); r >= 0; r = in.read(buf)) {
            n += r;
          }
        }
        record(token, new Seen(role, "tcp", src, n));
        String answer = "saw " + src + " at " + role + (talk == TcpTalk.STREAM ? " bytes " + n : "");
        c.getOutputStream().write((answer + "\n").getBytes(StandardCharsets.UTF_8));
        c.getOutputStream().flush();
      } catch (IOException e) {
        // closed, or a client that went away
      }
    }
  }

  private void serveUdp(String role, DatagramSocket udp) {
    byte[] buf = new byte[512];
    while (!udp.isClosed()) {
      try {
        DatagramPacket p = new DatagramPacket(buf, buf.length);
        udp.receive(p);
        String src = text(p.getAddress());
        record(new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8), new Seen(role, "udp", src));
        byte[] out = ("saw " + src + " at " + role).getBytes(StandardCharsets.UTF_8);
        udp.send(new DatagramPacket(out, out.length, p.getSocketAddress()));
      } catch (IOException e) {
        // closed, or a send that found no route: keep serving until closed
      }
    }
  }

  /** The token line byte by byte: a buffered reader would swallow the stream's payload that follows it. */
  private static String readLine(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int b = in.read(); b >= 0 && b != '\n'; b = in.read()) {
      sb.append((char) b);
    }
    return sb.toString();
  }

  private void record(String token, Seen seen) {
    log.add(new Sighting(token, seen));
  }

  /** An address as the plan and iproute2 print it (IPv6 compressed, without a zone; IPv4-mapped as IPv4). */
  private static String text(InetAddress a) {
    byte[] b = a.getAddress();
    return IpPrefix.host(b.length == 16 && isMapped(b) ? Arrays.copyOfRange(b, 12, 16) : b).addressText();
  }

  private static boolean isMapped(byte[] b) {
    for (int i = 0; i < 10; i++) {
      if (b[i] != 0) {
        return false;
      }
    }
    return (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff;
  }

  // ---- traffic --------------------------------------------------------------------------------

  /** One UDP datagram from {@code from} to {@code dst:port}, waiting up to 300 ms for the answer. */
  public Probe udp(String from, String dst, int port) {
    String token = UUID.randomUUID().toString();
    Optional<String> reply = thread(from).call(() -> {
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

  /**
   * One TCP connection from {@code from} to {@code dst:port} that sends a token line and, when the
   * topology talks in {@link TcpTalk#STREAM streams}, {@code bytes} bytes of full-size segments and the end
   * of its stream; then the answer line.
   */
  Probe tcp(String from, String dst, int port, int bytes) {
    if (bytes > 0 && talk != TcpTalk.STREAM) {
      throw new IllegalArgumentException("this topology's echo servers answer the token line at once");
    }
    String token = UUID.randomUUID().toString();
    Optional<String> reply = thread(from).call(() -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getByName(dst), port), talk.connectMillis);
        s.setSoTimeout(talk.answerMillis);
        OutputStream out = s.getOutputStream();
        out.write((token + "\n").getBytes(StandardCharsets.UTF_8));
        byte[] chunk = new byte[64 * 1024];
        for (int sent = 0; sent < bytes; sent += chunk.length) {
          out.write(chunk, 0, Math.min(chunk.length, bytes - sent));
        }
        out.flush();
        if (talk == TcpTalk.STREAM) {
          s.shutdownOutput();
        }
        String line = new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8)).readLine();
        return Optional.ofNullable(line);
      } catch (IOException e) {
        return Optional.<String>empty();
      }
    });
    return new Probe(reply, seen(token));
  }

  private List<Seen> seen(String token) {
    return log.stream().filter(s -> s.token().equals(token)).map(Sighting::seen).toList();
  }

  /** The namespace's own thread for sockets (entered on first use), with all wiring asked for so far applied. */
  private synchronized NetnsThread thread(String role) {
    flush();
    return threads.computeIfAbsent(role, r -> NetnsThread.enter(Optional.of(netns(r).name())));
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
    synchronized (this) {
      threads.values().forEach(NetnsThread::close);
    }
    for (int i = all.size() - 1; i >= 0; i--) {
      all.get(i).close();
    }
  }
}

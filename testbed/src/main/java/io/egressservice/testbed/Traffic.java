package io.egressservice.testbed;

import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NetnsThread;
import java.io.BufferedReader;
import java.io.DataInputStream;
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
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * Real packets in a {@link Cluster}: servers in the external routers and the pods that record who saw what, and
 * the client side that sends from any namespace (a pod, the client).
 *
 * <p>Ports, on every served namespace: {@link #ECHO_PORT} UDP (one socket per served address, so the answer leaves
 * from the address the request went to and conntrack can undo any NAT) and TCP (one line in, one line out): both
 * record (token, namespace, source address) and answer {@code saw <source> at <namespace>}. {@link #SINK_PORT}
 * TCP: a token line, then bytes until the sender shuts its side down; records the source and answers
 * {@code got <n> from <source> at <namespace>}. {@link #RTT_PORT} UDP and TCP: plain echo, nothing recorded (for
 * benchmarks).
 */
public final class Traffic implements AutoCloseable {
  public static final int ECHO_PORT = 7000;
  public static final int SINK_PORT = 7001;
  public static final int RTT_PORT = 7002;
  private static final int MAX_LOG = 100_000;

  /** What a server saw: which namespace (role), which protocol, which source address. */
  public record Seen(String where, String protocol, String source) {
    @Override
    public String toString() {
      return protocol + " from " + source + " at " + where;
    }
  }

  /** One attempt: the answer the sender got (empty if none) and what the servers saw of it. */
  public record Probe(Optional<String> reply, List<Seen> seen) {}

  /** A bulk TCP transfer: bytes written, the sink's answer ({@code got <n> ...}, empty if none), who saw it. */
  public record Transfer(long sent, Optional<String> reply, List<Seen> seen, Duration took) {
    /** Whether the sink answered that it received all {@link #sent} bytes. */
    public boolean complete() {
      return reply.map(r -> r.startsWith("got " + sent + " ")).orElse(false);
    }
  }

  private final Map<String, NetnsThread> threads = new ConcurrentHashMap<>();
  private final Map<String, Namespace> namespaces = new ConcurrentHashMap<>();
  private final List<AutoCloseable> servers = new ArrayList<>();
  private final ConcurrentLinkedQueue<String[]> log = new ConcurrentLinkedQueue<>();
  /** The size of {@link #log} (ConcurrentLinkedQueue#size walks the queue). */
  private final java.util.concurrent.atomic.AtomicInteger logged = new java.util.concurrent.atomic.AtomicInteger();
  private volatile boolean closed;

  Traffic() {}

  void register(Namespace ns) {
    namespaces.put(ns.role(), ns);
  }

  /** A thread living in the namespace of {@code role}, for sockets that must be created there. */
  public NetnsThread thread(String role) {
    Namespace ns = namespaces.get(role);
    if (ns == null) {
      throw new IllegalArgumentException("no namespace " + role + " in the cluster (known: " + namespaces.keySet() + ")");
    }
    return threads.computeIfAbsent(role, r -> NetnsThread.enter(Optional.of(ns.name())));
  }

  // ---- servers --------------------------------------------------------------------------------------

  /** Echo, sink and RTT servers in {@code role}'s namespace, UDP on each of {@code addresses}. */
  synchronized void serve(String role, List<String> addresses) {
    NetnsThread thread = thread(role);
    for (String address : addresses) {
      for (int port : new int[] {ECHO_PORT, RTT_PORT}) {
        DatagramSocket udp = thread.call(() -> {
          DatagramSocket u = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(address), port));
          // Room for seconds of the streams: a server starved by a loaded machine would otherwise drop at its socket
          // (RcvbufErrors), which a loss count cannot tell from the cluster's (the kernel caps it at rmem_max).
          u.setReceiveBufferSize(4 << 20);
          return u;
        });
        servers.add(udp);
        boolean record = port == ECHO_PORT;
        daemon("udp-" + port + "-" + role + "-" + address, () -> serveUdp(role, udp, record));
      }
    }
    ServerSocket echo = listen(thread, ECHO_PORT);
    daemon("tcp-echo-" + role, () -> accept(echo, c -> serveTcpEcho(role, c)));
    ServerSocket sink = listen(thread, SINK_PORT);
    daemon("tcp-sink-" + role, () -> accept(sink, c -> serveSink(role, c)));
    ServerSocket rtt = listen(thread, RTT_PORT);
    daemon("tcp-rtt-" + role, () -> accept(rtt, Traffic::serveRtt));
  }

  private ServerSocket listen(NetnsThread thread, int port) {
    ServerSocket s = thread.call(() -> {
      ServerSocket socket = new ServerSocket();
      socket.setReuseAddress(true);
      socket.bind(new InetSocketAddress(port), 64); // the wildcard: IPv6 and IPv4-mapped
      return socket;
    });
    servers.add(s);
    return s;
  }

  private interface Handler {
    void handle(Socket c) throws IOException;
  }

  private void accept(ServerSocket server, Handler handler) {
    while (!server.isClosed()) {
      Socket c;
      try {
        c = server.accept();
      } catch (IOException e) {
        continue; // closed (the loop ends) or an aborted connection
      }
      daemon("conn-" + c.getPort(), () -> {
        try (c) {
          handler.handle(c);
        } catch (IOException e) {
          // the peer went away
        }
      });
    }
  }

  private void serveUdp(String role, DatagramSocket udp, boolean record) {
    byte[] buf = new byte[2048];
    while (!udp.isClosed()) {
      try {
        DatagramPacket p = new DatagramPacket(buf, buf.length);
        udp.receive(p);
        if (!record) {
          udp.send(new DatagramPacket(p.getData(), p.getLength(), p.getSocketAddress()));
          continue;
        }
        String src = text(p.getAddress());
        record(new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8), role, "udp", src);
        byte[] out = ("saw " + src + " at " + role).getBytes(StandardCharsets.UTF_8);
        udp.send(new DatagramPacket(out, out.length, p.getSocketAddress()));
      } catch (IOException e) {
        // closed, or an answer that found no route: keep serving until closed
      }
    }
  }

  private void serveTcpEcho(String role, Socket c) throws IOException {
    c.setSoTimeout(2000);
    String src = text(c.getInetAddress());
    String token = new BufferedReader(new InputStreamReader(c.getInputStream(), StandardCharsets.UTF_8)).readLine();
    record(String.valueOf(token), role, "tcp", src);
    c.getOutputStream().write(("saw " + src + " at " + role + "\n").getBytes(StandardCharsets.UTF_8));
    c.getOutputStream().flush();
  }

  private void serveSink(String role, Socket c) throws IOException {
    c.setSoTimeout(10_000);
    String src = text(c.getInetAddress());
    InputStream in = c.getInputStream();
    String token = readLine(in);
    record(token, role, "tcp", src);
    byte[] buf = new byte[64 * 1024];
    long total = 0;
    for (int n = in.read(buf); n >= 0; n = in.read(buf)) {
      total += n;
    }
    c.getOutputStream().write(("got " + total + " from " + src + " at " + role + "\n").getBytes(StandardCharsets.UTF_8));
    c.getOutputStream().flush();
  }

  private static void serveRtt(Socket c) throws IOException {
    c.setTcpNoDelay(true);
    c.setSoTimeout(30_000);
    DataInputStream in = new DataInputStream(c.getInputStream());
    OutputStream out = c.getOutputStream();
    byte[] buf = new byte[64];
    while (true) {
      int n = in.read(buf);
      if (n < 0) {
        return;
      }
      out.write(buf, 0, n);
    }
  }

  /** A line of bytes up to '\n', without buffering past it (the bytes after it are the payload). */
  private static String readLine(InputStream in) throws IOException {
    StringBuilder sb = new StringBuilder();
    for (int b = in.read(); b >= 0 && b != '\n'; b = in.read()) {
      sb.append((char) b);
    }
    return sb.toString();
  }

  /**
   * Keeps the newest {@link #MAX_LOG} records: a long run's streams (three at 2 ms fill it in about a minute) must
   * still be judged on what arrives now, not stop being seen (what is judged is always recent).
   */
  private void record(String token, String role, String protocol, String src) {
    log.add(new String[] {token, role, protocol, src});
    if (logged.incrementAndGet() > MAX_LOG) {
      log.poll();
      logged.decrementAndGet();
    }
  }

  // ---- senders ------------------------------------------------------------------------------------

  /** One UDP datagram from {@code from} to {@code dst}:{@link #ECHO_PORT}, waiting up to 300 ms for the answer. */
  public Probe udp(String from, String dst) {
    String token = UUID.randomUUID().toString();
    Optional<String> reply = thread(from).call(() -> {
      // a new socket per attempt: a new source port, so a new conntrack entry sees the current rules and NAT
      try (DatagramSocket s = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(anyOf(dst)), 0))) {
        s.setSoTimeout(300);
        s.connect(InetAddress.getByName(dst), ECHO_PORT); // the answer only from where the request went
        byte[] out = token.getBytes(StandardCharsets.UTF_8);
        s.send(new DatagramPacket(out, out.length));
        byte[] in = new byte[512];
        DatagramPacket p = new DatagramPacket(in, in.length);
        try {
          s.receive(p);
          return Optional.of(new String(p.getData(), 0, p.getLength(), StandardCharsets.UTF_8));
        } catch (SocketTimeoutException e) {
          return Optional.empty();
        }
      } catch (IOException e) {
        return Optional.<String>empty(); // e.g. no route: nothing was seen
      }
    });
    return new Probe(reply, seen(token));
  }

  /** One TCP connection from {@code from} to {@code dst:port} (one line each way; 1 s to connect, 1 s to answer). */
  public Probe tcp(String from, String dst, int port) {
    String token = UUID.randomUUID().toString();
    Optional<String> reply = thread(from).call(() -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getByName(dst), port), 1000);
        s.setSoTimeout(1000);
        OutputStream out = s.getOutputStream();
        out.write((token + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
        return Optional.ofNullable(new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8))
            .readLine());
      } catch (IOException e) {
        return Optional.<String>empty();
      }
    });
    return new Probe(reply, seen(token));
  }

  public Probe tcp(String from, String dst) {
    return tcp(from, dst, ECHO_PORT);
  }

  /**
   * {@code bytes} over one TCP connection from {@code from} to {@code dst}:{@link #SINK_PORT} in 64 KiB writes,
   * then the sink's count; gives up (incomplete) after {@code limit}.
   */
  public Transfer transfer(String from, String dst, long bytes, Duration limit) {
    String token = UUID.randomUUID().toString();
    long start = System.nanoTime();
    int timeoutMillis = (int) Math.max(1000, limit.toMillis());
    Optional<String> reply = thread(from).call(() -> {
      try (Socket s = new Socket()) {
        s.connect(new InetSocketAddress(InetAddress.getByName(dst), SINK_PORT), 1000);
        s.setSoTimeout(timeoutMillis);
        OutputStream out = s.getOutputStream();
        out.write((token + "\n").getBytes(StandardCharsets.UTF_8));
        byte[] chunk = new byte[64 * 1024];
        long left = bytes;
        while (left > 0) {
          if (System.nanoTime() - start > limit.toNanos()) {
            return Optional.<String>empty();
          }
          int n = (int) Math.min(chunk.length, left);
          out.write(chunk, 0, n);
          left -= n;
        }
        out.flush();
        s.shutdownOutput();
        return Optional.ofNullable(new BufferedReader(new InputStreamReader(s.getInputStream(), StandardCharsets.UTF_8))
            .readLine());
      } catch (IOException e) {
        return Optional.<String>empty();
      }
    });
    return new Transfer(bytes, reply, seen(token), Duration.ofNanos(System.nanoTime() - start));
  }

  /** A datagram of a {@link #stream}, as a server saw it: when it was sent (monotonic), where, from which source. */
  public record Arrival(long sentNanos, long seq, String where, String source) {}

  /** A steady UDP stream from one socket (one conntrack entry, as an application's). */
  public final class Stream implements AutoCloseable {
    private final String id;
    private final Thread sender;
    private volatile boolean stopped;

    private Stream(String from, String dst, Duration interval) {
      this.id = "stream-" + UUID.randomUUID().toString().substring(0, 8) + "-" + from;
      DatagramSocket socket = thread(from).call(() -> {
        DatagramSocket s = new DatagramSocket(new InetSocketAddress(InetAddress.getByName(anyOf(dst)), 0));
        s.connect(InetAddress.getByName(dst), ECHO_PORT);
        return s;
      });
      synchronized (Traffic.this) {
        servers.add(socket);
      }
      sender = new Thread(() -> {
        long seq = 0;
        long next = System.nanoTime();
        while (!stopped && !closed) {
          byte[] out = (id + " " + seq++ + " " + System.nanoTime()).getBytes(StandardCharsets.UTF_8);
          try {
            socket.send(new DatagramPacket(out, out.length));
          } catch (IOException e) {
            // no route for now (a node down): the stream goes on
          }
          next += interval.toNanos();
          long wait = next - System.nanoTime();
          if (wait > 0) {
            java.util.concurrent.locks.LockSupport.parkNanos(wait);
          }
        }
        socket.close();
      }, id);
      sender.setDaemon(true);
      sender.start();
    }

    /** Every datagram of this stream the servers saw so far, in the order they saw them. */
    public List<Arrival> arrivals() {
      List<Arrival> out = new ArrayList<>();
      String prefix = id + " ";
      for (String[] e : log) {
        if (e[0].startsWith(prefix)) {
          String[] f = e[0].split(" ");
          out.add(new Arrival(Long.parseLong(f[2]), Long.parseLong(f[1]), e[1], e[3]));
        }
      }
      return out;
    }

    @Override
    public void close() {
      stopped = true;
      try {
        sender.join(2000);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }
  }

  /** Starts a UDP stream from {@code from} to {@code dst}:{@link #ECHO_PORT}, one datagram every {@code interval}. */
  public Stream stream(String from, String dst, Duration interval) {
    return new Stream(from, dst, interval);
  }

  /** What the servers recorded for {@code token}. */
  /** What the servers saw of the packets that carried {@code token} (a test's own, e.g. crafted, datagrams). */
  public List<Seen> seen(String token) {
    List<Seen> out = new ArrayList<>();
    for (String[] e : log) {
      if (e[0].equals(token)) {
        out.add(new Seen(e[1], e[2], e[3]));
      }
    }
    return out;
  }

  /** Canonical text (RFC 5952 for IPv6, as iproute2 prints it), so it compares with the cluster's addresses. */
  static String text(InetAddress a) {
    return IpPrefix.host(a.getAddress()).toString();
  }

  /** The wildcard address of {@code dst}'s family, so a socket is IPv4 or IPv6 as the destination is. */
  private static String anyOf(String dst) {
    return dst.contains(":") ? "::" : "0.0.0.0";
  }

  private static void daemon(String name, Runnable r) {
    Thread t = new Thread(r, name);
    t.setDaemon(true);
    t.start();
  }

  /** Servers, then the per-namespace threads. */
  @Override
  public synchronized void close() {
    if (closed) {
      return;
    }
    closed = true;
    for (AutoCloseable s : servers) {
      try {
        s.close();
      } catch (Exception e) {
        // best effort
      }
    }
    servers.clear();
    threads.values().forEach(NetnsThread::close);
    threads.clear();
  }
}

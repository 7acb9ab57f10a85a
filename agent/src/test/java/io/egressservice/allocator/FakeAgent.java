package io.egressservice.allocator;

import static org.awaitility.Awaitility.await;

import io.egressservice.health.Hosting;
import io.egressservice.health.ProbeIdentity;
import io.egressservice.health.ProbeKeys;
import io.egressservice.health.ProbeProof;
import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.net.StandardSocketOptions;
import java.nio.channels.ServerSocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One node's agent as the allocator's probes see it, on a loopback address, in one of the four states the prober
 * tells apart:
 * <ul>
 *   <li>{@link #answer() answering}: /healthz answers 200 naming its node ({@link ProbeIdentity#NODE_HEADER}), as
 *       the agent does; an answer without it does not speak for the node;</li>
 *   <li>{@link #stall() stalled} (SIGSTOP, a long GC): the kernel completes handshakes, nothing answers;</li>
 *   <li>{@link #silence() silent} (a node that is off): SYNs go unanswered, because the port's accept queue is
 *       full;</li>
 *   <li>{@link #stop() stopped} (the agent restarts): the port refuses connections.</li>
 * </ul>
 * Switching state re-binds the port when it must, retrying until the old socket is really gone. While answering, it
 * also answers {@code GET /hosting} with the services it was told it {@link #receive receives} (none at first), as
 * the agent does for planned moves.
 */
final class FakeAgent implements AutoCloseable {
  private static final Duration REBIND = Duration.ofSeconds(5);

  private final InetSocketAddress address;
  private final String node;
  private AutoCloseable listener;
  private volatile List<String> receiving = List.of();
  private volatile ProbeKeys keys = ProbeKeys.none();
  private final AtomicInteger hostingReads = new AtomicInteger();

  private FakeAgent(InetSocketAddress address, String node) {
    this.address = address;
    this.node = node;
  }

  /** The agent of {@code node} at {@code address}, answering. */
  static FakeAgent answering(InetSocketAddress address, String node) {
    FakeAgent a = new FakeAgent(address, node);
    a.answer();
    return a;
  }

  /** A port free on 127.0.1.1, for every node's agent to use on its own loopback address. */
  static int freePort() throws IOException {
    try (ServerSocket s = new ServerSocket(0, 1, InetAddress.getByName("127.0.1.1"))) {
      return s.getLocalPort();
    }
  }

  /** From now on /healthz answers to a challenge carry a proof under {@code k}'s key, as the agent's do. */
  void proveWith(ProbeKeys k) {
    keys = k;
  }

  /** From now on /hosting lists these services ({@code namespace/name}) as received here. */
  void receive(List<String> services) {
    receiving = List.copyOf(services);
  }

  /** How many times /hosting was asked. */
  int hostingReads() {
    return hostingReads.get();
  }

  /** Answers /healthz with 200 naming the node (binding again if the port is silent or stopped). */
  synchronized void answer() {
    if (listener instanceof Answering a) {
      a.stalled = false;
      return;
    }
    stop();
    listener = bind(() -> new Answering(address, this));
  }

  /** Accepts connections and never answers them. */
  synchronized void stall() {
    answer();
    ((Answering) listener).stalled = true;
  }

  /** Leaves SYNs unanswered, as a node that is off. */
  synchronized void silence() {
    if (listener instanceof SilentPort) {
      return;
    }
    stop();
    listener = bind(() -> new SilentPort(address));
  }

  /** Refuses connections. */
  synchronized void stop() {
    AutoCloseable l = listener;
    listener = null;
    if (l != null) {
      try {
        l.close();
      } catch (Exception e) {
        throw new IllegalStateException("closing the agent port of " + node, e);
      }
    }
  }

  @Override
  public void close() {
    stop();
  }

  private interface Binder {
    AutoCloseable bind() throws IOException;
  }

  private AutoCloseable bind(Binder binder) {
    return await().atMost(REBIND).pollInterval(Duration.ofMillis(50)).ignoreExceptions()
        .until(binder::bind, x -> true);
  }

  /** Answers each connection, or, while stalled, holds it unanswered. */
  private static final class Answering implements AutoCloseable {
    final ServerSocket socket;
    final FakeAgent agent;
    final List<Socket> held = new CopyOnWriteArrayList<>();
    volatile boolean stalled;

    Answering(InetSocketAddress address, FakeAgent agent) throws IOException {
      this.agent = agent;
      socket = new ServerSocket();
      socket.setReuseAddress(true);
      try {
        socket.bind(address, 64);
      } catch (IOException e) {
        socket.close();
        throw e;
      }
      Thread t = new Thread(this::serve, "agent-" + address);
      t.setDaemon(true);
      t.start();
    }

    private void serve() {
      while (!socket.isClosed()) {
        try {
          Socket c = socket.accept();
          if (stalled) {
            held.add(c);
            continue;
          }
          try (c) {
            c.setSoTimeout(1000);
            byte[] buf = new byte[512];
            int n = c.getInputStream().read(buf);
            String request = n > 0 ? new String(buf, 0, n, StandardCharsets.US_ASCII) : "";
            String body = "ok\n";
            if (request.startsWith("GET /hosting ")) {
              agent.hostingReads.incrementAndGet();
              body = new Hosting(agent.node, agent.receiving).toJson();
            }
            byte[] b = body.getBytes(StandardCharsets.UTF_8);
            String proof = request.lines().filter(l -> l.startsWith(ProbeProof.CHALLENGE_HEADER + ": ")).findFirst()
                .flatMap(l -> agent.keys.now().current().map(k -> ProbeProof.PROOF_HEADER + ": " + ProbeProof.prove(k,
                    l.substring(ProbeProof.CHALLENGE_HEADER.length() + 2).trim(), agent.node, Optional.empty(), 200)
                    + "\r\n")).orElse("");
            c.getOutputStream().write(("HTTP/1.0 200 OK\r\n" + ProbeIdentity.NODE_HEADER + ": " + agent.node
                + "\r\n" + proof + "Content-Length: " + b.length + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
            c.getOutputStream().write(b);
          }
        } catch (IOException e) {
          // closed, or a probe that gave up
        }
      }
    }

    @Override
    public void close() throws IOException {
      socket.close();
      for (Socket c : held) {
        c.close();
      }
    }
  }

  /**
   * A listening socket that never accepts, its accept queue filled: Linux drops a SYN to a listener whose accept
   * queue is full (tcp_conn_request: LISTENOVERFLOWS), so a connect times out as to a node that is off.
   */
  private static final class SilentPort implements AutoCloseable {
    final ServerSocketChannel socket = ServerSocketChannel.open();
    final List<Socket> fill = new ArrayList<>();

    SilentPort(InetSocketAddress address) throws IOException {
      try {
        socket.setOption(StandardSocketOptions.SO_REUSEADDR, true);
        socket.bind(address, 1);
        for (int k = 0; k < 8; k++) {
          Socket c = new Socket();
          try {
            c.connect(address, 300);
            fill.add(c);
          } catch (SocketTimeoutException e) {
            c.close();
            return; // full: SYNs are dropped from now on
          }
        }
        throw new IOException("the accept queue of " + address + " did not fill up");
      } catch (IOException | RuntimeException e) {
        close();
        throw e;
      }
    }

    @Override
    public void close() throws IOException {
      for (Socket c : fill) {
        c.close();
      }
      socket.close();
    }
  }
}

package io.egressservice.allocator;

import io.egressservice.netlink.NetnsThread;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.ConnectException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Probes {@code GET /healthz} of the agents of a set of nodes over plain HTTP/1.0, each node every {@code
 * interval} with a {@code timeout} for connect and answer together; probes of one node may overlap (a silent node
 * is noticed after {@code failures} intervals plus one timeout, not after {@code failures} timeouts). Results go
 * to a listener with their per-node sequence number. Read-only towards the API server: it opens TCP connections to
 * the nodes only.
 *
 * <p>With a probe namespace (tests: the namespace cluster's node network) the sockets are created inside it.
 */
public final class AgentProber implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(AgentProber.class);

  /** Receives every result. */
  public interface Listener {
    void result(String node, long seq, ProbeResult result);
  }

  private final Duration interval;
  private final Duration timeout;
  private final Optional<NetnsThread> netns;
  private final Listener listener;
  private final ScheduledExecutorService pool;
  private final Map<String, Target> targets = new HashMap<>();

  private final class Target {
    final InetSocketAddress address;
    final AtomicLong seq = new AtomicLong();
    final ScheduledFuture<?> task;

    Target(String node, InetSocketAddress address) {
      this.address = address;
      this.task = pool.scheduleAtFixedRate(() -> probe(node, this), 0, interval.toNanos(), TimeUnit.NANOSECONDS);
    }
  }

  /**
   * @param threads probes in flight at once at most (a probe takes at most {@code timeout}; about hosts x timeout
   *     / interval are needed)
   */
  public AgentProber(Duration interval, Duration timeout, int threads, Optional<String> probeNetns, Listener listener) {
    this.interval = Objects.requireNonNull(interval);
    this.timeout = Objects.requireNonNull(timeout);
    this.listener = Objects.requireNonNull(listener);
    this.netns = probeNetns.map(n -> NetnsThread.enter(Optional.of(n)));
    this.pool = Executors.newScheduledThreadPool(threads, r -> {
      Thread t = new Thread(r, "egress-allocator-probe");
      t.setDaemon(true);
      return t;
    });
  }

  /** Probes exactly these nodes from now on (a node whose address changed starts over). */
  public synchronized void probe(Map<String, InetSocketAddress> wanted) {
    targets.entrySet().removeIf(e -> {
      boolean drop = !e.getValue().address.equals(wanted.get(e.getKey()));
      if (drop) {
        e.getValue().task.cancel(false);
      }
      return drop;
    });
    wanted.forEach((node, address) -> targets.computeIfAbsent(node, n -> new Target(n, address)));
  }

  private void probe(String node, Target target) {
    long seq = target.seq.getAndIncrement();
    ProbeResult r = probeOnce(target.address);
    synchronized (this) {
      if (targets.get(node) != target) {
        return;
      }
    }
    listener.result(node, seq, r);
  }

  /** One probe: connect, {@code GET /healthz}, the status line, all within the timeout. */
  ProbeResult probeOnce(InetSocketAddress address) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try (Socket s = socket()) {
      s.connect(address, (int) Math.max(1, timeout.toMillis()));
      int left = (int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime()));
      s.setSoTimeout(left);
      OutputStream out = s.getOutputStream();
      String host = address.getAddress().getHostAddress();
      out.write(("GET /healthz HTTP/1.0\r\nHost: " + (host.contains(":") ? "[" + host + "]" : host)
          + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      out.flush();
      byte[] line = new byte[12];
      InputStream in = s.getInputStream();
      int n = 0;
      while (n < line.length) {
        int k = in.read(line, n, line.length - n);
        if (k < 0) {
          break;
        }
        n += k;
      }
      String status = new String(line, 0, n, StandardCharsets.US_ASCII);
      return status.startsWith("HTTP/1.") && status.length() >= 12 && status.substring(9, 12).equals("200")
          ? ProbeResult.HEALTHY : ProbeResult.AGENT_DOWN;
    } catch (ConnectException e) {
      // Refused: the node's kernel answered with a reset, nothing listens. Unreachable host or network: no answer.
      String m = String.valueOf(e.getMessage());
      return m.contains("refused") ? ProbeResult.AGENT_DOWN : ProbeResult.NO_ANSWER;
    } catch (SocketTimeoutException e) {
      return ProbeResult.NO_ANSWER;
    } catch (IOException e) {
      // A connection reset or closed mid-answer: the node is up, the agent is not answering properly.
      String m = String.valueOf(e.getMessage());
      LOG.debug("probe of {}: {}", address, m);
      return m.contains("unreachable") || m.contains("No route") ? ProbeResult.NO_ANSWER : ProbeResult.AGENT_DOWN;
    }
  }

  private Socket socket() throws IOException {
    if (netns.isEmpty()) {
      return new Socket();
    }
    try {
      return netns.get().call(() -> SocketChannel.open().socket());
    } catch (RuntimeException e) {
      throw new IOException("cannot open a socket in the probe namespace: " + e.getMessage(), e);
    }
  }

  @Override
  public synchronized void close() {
    targets.values().forEach(t -> t.task.cancel(false));
    targets.clear();
    pool.shutdownNow();
    netns.ifPresent(NetnsThread::close);
  }
}

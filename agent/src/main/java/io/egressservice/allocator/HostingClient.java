package io.egressservice.allocator;

import io.egressservice.health.Hosting;
import io.egressservice.netlink.NetnsThread;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * Reads an agent's {@code GET /hosting} ({@link Hosting}) over plain HTTP/1.0 on its probe port: which services its
 * kernel receives for. Read-only; one connection per read, within a timeout for connect and answer together. An
 * answer that does not name the node asked counts as none (another process on the port speaks for no node).
 */
final class HostingClient implements AutoCloseable {
  /** A host of 10,000 services answers about 300 KB; more is not an agent's answer. */
  private static final int MAX_BODY = 8 << 20;

  private final Duration timeout;
  private final Optional<NetnsThread> netns;

  HostingClient(Duration timeout, Optional<String> probeNetns) {
    this.timeout = timeout;
    this.netns = probeNetns.map(n -> NetnsThread.enter(Optional.of(n)));
  }

  /** The answer of {@code node}'s agent at {@code address}; empty when there is none (or not from that node). */
  Optional<Hosting> read(String node, InetSocketAddress address) {
    long deadline = System.nanoTime() + timeout.toNanos();
    try (Socket s = socket()) {
      s.connect(address, (int) Math.max(1, timeout.toMillis()));
      String host = address.getAddress().getHostAddress();
      s.getOutputStream().write(("GET " + Hosting.PATH + " HTTP/1.0\r\nHost: "
          + (host.contains(":") ? "[" + host + "]" : host) + "\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      s.getOutputStream().flush();
      ByteArrayOutputStream all = new ByteArrayOutputStream();
      InputStream in = s.getInputStream();
      byte[] buf = new byte[16384];
      while (all.size() <= MAX_BODY) {
        long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
        if (left <= 0) {
          return Optional.empty();
        }
        s.setSoTimeout((int) left);
        int n = in.read(buf);
        if (n < 0) {
          break;
        }
        all.write(buf, 0, n);
      }
      String text = all.toString(StandardCharsets.UTF_8);
      int split = text.indexOf("\r\n\r\n");
      if (!text.startsWith("HTTP/1.") || text.length() < 12 || !text.startsWith("200", 9) || split < 0) {
        return Optional.empty();
      }
      return Hosting.parse(text.substring(split + 4)).filter(h -> h.node().equals(node));
    } catch (IOException | RuntimeException e) {
      return Optional.empty();
    }
  }

  private Socket socket() throws IOException {
    if (netns.isEmpty()) {
      return new Socket();
    }
    return netns.get().call(() -> SocketChannel.open().socket());
  }

  @Override
  public void close() {
    netns.ifPresent(NetnsThread::close);
  }
}

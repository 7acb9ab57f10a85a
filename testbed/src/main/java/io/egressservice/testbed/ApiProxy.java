package io.egressservice.testbed;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Duration;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on the loopback in front of the test API server, that fails the ways a real one does: it
 * <em>hangs</em> (connections, old and new, are accepted and then nothing moves either way: a stopped or
 * overloaded API server, or a black-holing network), <em>refuses</em> (every connection cut, the port closed:
 * a restart), <em>silences</em> the connections open at the moment (a load balancer failing over, a lost NAT entry:
 * they stay open and deliver nothing, while new ones work), is <em>slow</em> (every request waits before it is
 * forwarded) or passes. Clients are pointed at {@link #port()}; only the test talks to it.
 */
public final class ApiProxy implements AutoCloseable {
  /**
   * What the proxy does with bytes and connections. {@code SILENT}: every connection open at the switch stays open
   * for good (no RST, no FIN, its bytes read and dropped, so the peer's kernel ACKs them) and forwards nothing either
   * way, until its client closes it; connections opened after the switch pass, also once the mode is PASS again.
   */
  public enum Mode { PASS, HANG, REFUSE, SILENT }

  /** One client connection and its upstream; once silenced, always silenced. */
  private static final class Link {
    final Socket client;
    final Socket upstream;
    volatile boolean silenced;

    Link(Socket client, Socket upstream) {
      this.client = client;
      this.upstream = upstream;
    }
  }

  private final InetSocketAddress target;
  private final int port;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final Set<Link> links = ConcurrentHashMap.newKeySet();
  private final Object lock = new Object();
  private volatile Mode mode = Mode.PASS;
  private volatile boolean closed;
  private volatile Duration perRequest = Duration.ZERO;
  private ServerSocket listener;
  private Thread acceptor;

  public ApiProxy(int targetPort) {
    this.target = new InetSocketAddress(InetAddress.getLoopbackAddress(), targetPort);
    try {
      listener = listen(0);
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
    port = listener.getLocalPort();
    startAccepting();
  }

  private static ServerSocket listen(int port) throws IOException {
    ServerSocket s = new ServerSocket();
    s.setReuseAddress(true);
    s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
    return s;
  }

  public int port() {
    return port;
  }

  public Mode mode() {
    return mode;
  }

  /**
   * A slow API server: from now on every chunk a client sends (a request, as a rule one chunk) waits
   * {@code perRequest} before it is forwarded, so requests on one connection queue behind each other as on a
   * server that is seconds behind. {@link Duration#ZERO} ends it.
   */
  public void slow(Duration perRequest) {
    if (perRequest.isNegative()) {
      throw new IllegalArgumentException("a delay cannot be negative: " + perRequest);
    }
    this.perRequest = perRequest;
  }

  /** The delay {@link #slow(Duration)} set, zero when the proxy is not slow. */
  public Duration slowness() {
    return perRequest;
  }

  /**
   * Switches the failure: to REFUSE cuts every connection and closes the port; from REFUSE opens it again (the
   * same port). HANG freezes what is open and what comes. SILENT silences every connection open now, for good.
   */
  public void mode(Mode next) {
    synchronized (lock) {
      if (closed || next == mode) {
        return;
      }
      Mode before = mode;
      mode = next;
      if (next == Mode.SILENT) {
        links.forEach(l -> l.silenced = true);
      }
      if (next == Mode.REFUSE) {
        closeQuietly(listener);
        sockets.forEach(ApiProxy::closeQuietly);
      } else if (before == Mode.REFUSE) {
        try {
          listener = listen(port);
        } catch (IOException e) {
          throw new UncheckedIOException("cannot listen on port " + port + " again", e);
        }
        startAccepting();
      }
      lock.notifyAll();
    }
  }

  private void startAccepting() {
    ServerSocket l = listener;
    acceptor = new Thread(() -> accept(l), "api-proxy-accept");
    acceptor.setDaemon(true);
    acceptor.start();
  }

  private void accept(ServerSocket l) {
    while (!l.isClosed()) {
      try {
        Socket client = l.accept();
        synchronized (lock) {
          // a connection accepted just as REFUSE closed the port is cut too: REFUSE cuts what it finds in sockets
          if (l.isClosed() || closed) {
            closeQuietly(client);
            continue;
          }
          sockets.add(client);
        }
        Thread t = new Thread(() -> connect(client), "api-proxy-conn");
        t.setDaemon(true);
        t.start();
      } catch (IOException e) {
        return; // closed
      }
    }
  }

  private void connect(Socket client) {
    try {
      awaitNotHanging();
      Socket upstream = new Socket();
      sockets.add(upstream);
      upstream.connect(target, 5000);
      Link link = new Link(client, upstream);
      links.add(link);
      pump(link, true);
      pump(link, false);
    } catch (IOException | InterruptedException e) {
      closeQuietly(client);
    }
  }

  private void awaitNotHanging() throws InterruptedException {
    synchronized (lock) {
      while (mode == Mode.HANG && !closed) {
        lock.wait();
      }
    }
  }

  /**
   * Copies one direction of {@code link}. A silenced link's bytes are read and dropped; its upstream ending closes
   * only the upstream (its client hears nothing), its client ending closes both.
   */
  private void pump(Link link, boolean fromClient) {
    Socket from = fromClient ? link.client : link.upstream;
    Socket to = fromClient ? link.upstream : link.client;
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16384];
      boolean clientEnded = fromClient;
      try {
        InputStream in = from.getInputStream();
        OutputStream out = to.getOutputStream();
        int n;
        while ((n = in.read(buf)) >= 0) {
          awaitNotHanging();
          Duration delay = perRequest;
          if (fromClient && !delay.isZero() && !link.silenced) {
            Thread.sleep(delay.toMillis()); // the fault itself: a server that takes this long per request
          }
          if (!link.silenced) {
            out.write(buf, 0, n);
            out.flush();
          }
        }
      } catch (IOException | InterruptedException e) {
        // one side went: the other goes too, unless the link is silenced and the client is still there
        clientEnded = clientEnded || !link.silenced || closed;
      } finally {
        if (link.silenced && !clientEnded && !closed) {
          closeQuietly(link.upstream);
          sockets.remove(link.upstream);
        } else {
          closeQuietly(link.client);
          closeQuietly(link.upstream);
          sockets.remove(link.client);
          sockets.remove(link.upstream);
          links.remove(link);
        }
      }
    }, "api-proxy-pump");
    t.setDaemon(true);
    t.start();
  }

  private static void closeQuietly(java.io.Closeable c) {
    try {
      c.close();
    } catch (IOException e) {
      // closing anyway
    }
  }

  @Override
  public void close() {
    synchronized (lock) {
      closed = true;
      closeQuietly(listener);
      sockets.forEach(ApiProxy::closeQuietly);
      lock.notifyAll();
    }
  }
}

package io.egressservice.testbed;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A TCP proxy on the loopback in front of the test API server, that fails the ways a real one does: it
 * <em>hangs</em> (connections, old and new, are accepted and then nothing moves either way: a stopped or
 * overloaded API server, or a black-holing network), <em>refuses</em> (every connection cut, the port closed:
 * a restart) or passes. Clients are pointed at {@link #port()}; only the test talks to it.
 */
public final class ApiProxy implements AutoCloseable {
  /** What the proxy does with bytes and connections. */
  public enum Mode { PASS, HANG, REFUSE }

  private final InetSocketAddress target;
  private final int port;
  private final Set<Socket> sockets = ConcurrentHashMap.newKeySet();
  private final Object lock = new Object();
  private volatile Mode mode = Mode.PASS;
  private volatile boolean closed;
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
   * Switches the failure: to REFUSE cuts every connection and closes the port; from REFUSE opens it again (the
   * same port). HANG freezes what is open and what comes.
   */
  public void mode(Mode next) {
    synchronized (lock) {
      if (closed || next == mode) {
        return;
      }
      Mode before = mode;
      mode = next;
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
        sockets.add(client);
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
      pump(client, upstream);
      pump(upstream, client);
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

  private void pump(Socket from, Socket to) {
    Thread t = new Thread(() -> {
      byte[] buf = new byte[16384];
      try (InputStream in = from.getInputStream(); OutputStream out = to.getOutputStream()) {
        int n;
        while ((n = in.read(buf)) >= 0) {
          awaitNotHanging();
          out.write(buf, 0, n);
          out.flush();
        }
      } catch (IOException | InterruptedException e) {
        // one side went: the other goes too
      } finally {
        closeQuietly(from);
        closeQuietly(to);
        sockets.remove(from);
        sockets.remove(to);
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

package io.egressservice.health;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedSelectorException;
import java.nio.channels.SelectionKey;
import java.nio.channels.Selector;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Queue;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A small HTTP/1.1 server for a port that any client on the node's network may reach (the agent runs with
 * the host's network), built so that no client can keep the probes from being answered:
 *
 * <ul>
 *   <li>one selector thread does all the socket I/O, non-blocking: a slow or idle client costs a connection
 *       slot, never a thread;
 *   <li>each connection has a deadline for its whole request head ({@link Limits#requestDeadline}) and one
 *       for writing the answer: a client sending a byte every few seconds is cut off, whatever its pace;
 *   <li>at most {@link Limits#maxConnections} are open; a new one beyond that evicts the oldest scrape (answered
 *       or being read however slowly: slow {@code /metrics} readers cannot hold every slot), else the oldest that
 *       has not sent a full request yet (a probe sends its request at once, so it is never the oldest for long);
 *   <li>cheap routes (the probes) are answered on the selector thread itself; expensive ones (a metrics
 *       scrape) run on a bounded pool with a bounded queue, and get 503 when it is full, so a slow scrape
 *       delays only other scrapes.
 * </ul>
 *
 * <p>Every answer closes its connection ({@code Connection: close}): the clients (kubelet, Prometheus)
 * reconnect, and nothing is held between requests.
 */
final class ProbeHttpServer implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ProbeHttpServer.class);

  /** How long and how much a client may take. */
  record Limits(Duration requestDeadline, Duration writeDeadline, Duration handlerDeadline, int maxConnections,
      int maxRequestHeadBytes, int slowThreads, int slowQueue) {
    static Limits defaults() {
      return new Limits(Duration.ofSeconds(3), Duration.ofSeconds(10), Duration.ofSeconds(30), 64, 8192, 1, 2);
    }
  }

  /** A parsed request head. {@code headers} keys are lower case. */
  record Request(String method, String path, String query, Map<String, List<String>> headers) {}

  /** A complete answer. */
  record Response(int status, Map<String, String> headers, byte[] body) {
    static Response text(int status, String body) {
      return new Response(status, Map.of("Content-Type", "text/plain; charset=utf-8"),
          body.getBytes(StandardCharsets.UTF_8));
    }
  }

  /** A route: answered inline (cheap) or on the bounded pool (may be slow). */
  record Route(boolean slow, Function<Request, Response> handler) {}

  private enum State { READING, HANDLING, WRITING }

  private final class Connection {
    final SocketChannel channel;
    final SelectionKey key;
    final ByteBuffer in;
    final long acceptedNanos = System.nanoTime();
    ByteBuffer out;
    State state = State.READING;
    /** Asked for a slow route (a scrape): the first to go when the probes need a slot. */
    boolean slow;
    long deadlineNanos;

    Connection(SocketChannel channel, SelectionKey key) {
      this.channel = channel;
      this.key = key;
      this.in = ByteBuffer.allocate(limits.maxRequestHeadBytes());
      this.deadlineNanos = acceptedNanos + limits.requestDeadline().toNanos();
    }
  }

  private final Limits limits;
  private final Function<String, Route> routes;
  private final Map<String, String> everyAnswer;
  private final ServerSocketChannel server;
  private final Selector selector;
  private final Thread loop;
  private final ThreadPoolExecutor slowPool;
  /** Open connections, oldest first. Touched by the selector thread only. */
  private final LinkedHashSet<Connection> open = new LinkedHashSet<>();
  private final Queue<Runnable> fromPool = new ConcurrentLinkedQueue<>();
  private volatile boolean running = true;
  private long lastAcceptWarning = System.nanoTime() - TimeUnit.SECONDS.toNanos(10);

  private ProbeHttpServer(InetSocketAddress address, Limits limits, Function<String, Route> routes,
      Map<String, String> everyAnswer) throws IOException {
    this.limits = limits;
    this.routes = routes;
    this.everyAnswer = Map.copyOf(everyAnswer);
    this.selector = Selector.open();
    this.server = ServerSocketChannel.open();
    try {
      // While the agent is stopped (a long GC pause, CPU starvation) the kernel still completes the probes'
      // handshakes into this queue, which tells the allocator the node is up; a short queue would fill within the
      // allocator's agent-down grace (a few probes a second from each replica) and make the node look powered off.
      // The kernel caps it at net.core.somaxconn (4096 since Linux 5.4; 128 before: raise it there).
      server.bind(address, 1024);
      server.configureBlocking(false);
      server.register(selector, SelectionKey.OP_ACCEPT);
    } catch (IOException e) {
      server.close();
      selector.close();
      throw e;
    }
    this.slowPool = new ThreadPoolExecutor(limits.slowThreads(), limits.slowThreads(), 0, TimeUnit.MILLISECONDS,
        new ArrayBlockingQueue<>(limits.slowQueue()), r -> {
          Thread t = new Thread(r, "http-scrape");
          t.setDaemon(true);
          return t;
        });
    this.loop = new Thread(this::run, "http-probes");
    loop.setDaemon(true);
    loop.start();
  }

  /**
   * Listens on {@code address} (port 0: a free one) and serves {@code routes} by path (null: 404); every answer,
   * errors included, carries {@code everyAnswer} as headers.
   */
  static ProbeHttpServer start(InetSocketAddress address, Limits limits, Function<String, Route> routes,
      Map<String, String> everyAnswer) throws IOException {
    return new ProbeHttpServer(address, limits, routes, everyAnswer);
  }

  int port() {
    return server.socket().getLocalPort();
  }

  private void run() {
    try {
      while (running) {
        long now = System.nanoTime();
        long wait = 200;
        for (Connection c : open) {
          wait = Math.min(wait, Math.max(1, TimeUnit.NANOSECONDS.toMillis(c.deadlineNanos - now) + 1));
        }
        selector.select(wait);
        Runnable r;
        while ((r = fromPool.poll()) != null) {
          try {
            r.run();
          } catch (RuntimeException e) {
            LOG.warn("a scrape's answer could not be sent: {}", e.toString());
          }
        }
        Iterator<SelectionKey> keys = selector.selectedKeys().iterator();
        while (keys.hasNext()) {
          SelectionKey key = keys.next();
          keys.remove();
          if (!key.isValid()) {
            continue;
          }
          if (key.isAcceptable()) {
            acceptSome();
          } else if (key.attachment() instanceof Connection c) {
            serve(key, c);
          }
        }
        expire(System.nanoTime());
      }
    } catch (IOException | ClosedSelectorException e) {
      if (running) {
        LOG.error("the /metrics, /healthz and /readyz server stopped: {}", e.getMessage(), e);
      }
    } finally {
      new ArrayList<>(open).forEach(this::close);
    }
  }

  /**
   * One ready connection. What goes wrong with it (its key cancelled under it, a bug in parsing) costs that
   * connection only: this thread answers every probe, and the process ends when it dies (FailFast).
   */
  private void serve(SelectionKey key, Connection c) {
    try {
      if (key.isReadable() && c.state == State.READING) {
        read(c);
      } else if (key.isWritable() && c.state == State.WRITING) {
        write(c);
      }
    } catch (RuntimeException e) {
      LOG.warn("connection from {} closed: {}", remote(c), e.toString());
      close(c);
    }
  }

  /** Whether the I/O thread still runs: the probes go unanswered once it has ended. */
  boolean serving() {
    return loop.isAlive();
  }

  /** A few per round, so that reads of connections already open interleave with a flood of new ones. */
  private void acceptSome() throws IOException {
    for (int i = 0; i < 16; i++) {
      SocketChannel ch;
      try {
        ch = server.accept();
      } catch (IOException e) {
        // e.g. out of file descriptors: the connections already open go on, and accepting is tried again
        if (System.nanoTime() - lastAcceptWarning > TimeUnit.SECONDS.toNanos(10)) {
          lastAcceptWarning = System.nanoTime();
          LOG.warn("cannot accept a connection on the /metrics port: {}", e.getMessage());
        }
        return;
      }
      if (ch == null) {
        return;
      }
      if (open.size() >= limits.maxConnections() && !evictForNewcomer()) {
        ch.close(); // every slot is busy answering: the client retries
        continue;
      }
      ch.configureBlocking(false);
      SelectionKey key = ch.register(selector, SelectionKey.OP_READ);
      Connection c = new Connection(ch, key);
      key.attach(c);
      open.add(c);
    }
  }

  /**
   * Makes room for a new connection, which may be a probe: the oldest scrape goes first (being answered or read
   * however slowly: a scrape can be asked again, a probe that fails restarts the agent), else the oldest connection
   * without a full request yet (a probe sends its request at once, so it is never the oldest for long). Probes'
   * answers are written at once and never wait, so only a full table of probes being answered right now turns a
   * newcomer away.
   */
  private boolean evictForNewcomer() {
    Connection reading = null;
    for (Connection c : open) {
      if (c.slow) {
        LOG.debug("connection from {} closed: {} open, it is the oldest scrape ({})", remote(c), open.size(),
            c.state.name().toLowerCase(Locale.ROOT));
        close(c);
        return true;
      }
      if (reading == null && c.state == State.READING) {
        reading = c;
      }
    }
    if (reading != null) {
      LOG.debug("connection from {} closed: {} open, it is the oldest without a full request", remote(reading),
          open.size());
      close(reading);
      return true;
    }
    return false;
  }

  private void expire(long now) {
    List<Connection> late = new ArrayList<>();
    for (Connection c : open) {
      if (now - c.deadlineNanos >= 0) {
        late.add(c);
      }
    }
    for (Connection c : late) {
      LOG.debug("connection from {} closed after {} ms: deadline passed while {}", remote(c),
          TimeUnit.NANOSECONDS.toMillis(now - c.acceptedNanos), c.state.name().toLowerCase(Locale.ROOT));
      close(c);
    }
  }

  private void read(Connection c) {
    int n;
    try {
      n = c.channel.read(c.in);
    } catch (IOException e) {
      close(c);
      return;
    }
    if (n < 0) {
      close(c);
      return;
    }
    int end = headEnd(c.in);
    if (end < 0) {
      if (!c.in.hasRemaining()) {
        respond(c, Response.text(431, "request head larger than " + limits.maxRequestHeadBytes() + " bytes\n"), false);
      }
      return;
    }
    Request request;
    try {
      request = parse(new String(c.in.array(), 0, end, StandardCharsets.ISO_8859_1));
    } catch (IllegalArgumentException e) {
      respond(c, Response.text(400, "bad request: " + e.getMessage() + "\n"), false);
      return;
    }
    boolean head = request.method().equals("HEAD");
    if (!head && !request.method().equals("GET")) {
      respond(c, Response.text(405, "only GET and HEAD\n"), false);
      return;
    }
    Route route = routes.apply(request.path());
    if (route == null) {
      respond(c, Response.text(404, "not found: try /metrics, /healthz or /readyz\n"), head);
      return;
    }
    if (!route.slow()) {
      respond(c, handle(route, request), head);
      return;
    }
    c.state = State.HANDLING;
    c.slow = true;
    c.key.interestOps(0);
    c.deadlineNanos = System.nanoTime() + limits.handlerDeadline().toNanos();
    try {
      slowPool.execute(() -> {
        Response r = handle(route, request);
        fromPool.add(() -> {
          if (open.contains(c)) {
            respond(c, r, head);
          }
        });
        selector.wakeup();
      });
    } catch (RejectedExecutionException e) {
      respond(c, Response.text(503, "busy: another scrape is being answered\n"), head);
    }
  }

  private static Response handle(Route route, Request request) {
    try {
      return route.handler().apply(request);
    } catch (RuntimeException e) {
      LOG.warn("{} failed: {}", request.path(), e.toString());
      return Response.text(500, "internal error\n");
    }
  }

  private void respond(Connection c, Response r, boolean headOnly) {
    StringBuilder sb = new StringBuilder();
    sb.append("HTTP/1.1 ").append(r.status()).append(' ').append(reasonPhrase(r.status())).append("\r\n");
    everyAnswer.forEach((k, v) -> sb.append(k).append(": ").append(v).append("\r\n"));
    r.headers().forEach((k, v) -> sb.append(k).append(": ").append(v).append("\r\n"));
    sb.append("Content-Length: ").append(r.body().length).append("\r\n");
    sb.append("Connection: close\r\n\r\n");
    byte[] head = sb.toString().getBytes(StandardCharsets.ISO_8859_1);
    ByteBuffer out = ByteBuffer.allocate(head.length + (headOnly ? 0 : r.body().length));
    out.put(head);
    if (!headOnly) {
      out.put(r.body());
    }
    out.flip();
    c.out = out;
    c.state = State.WRITING;
    c.deadlineNanos = System.nanoTime() + limits.writeDeadline().toNanos();
    c.key.interestOps(SelectionKey.OP_WRITE);
    write(c);
  }

  private void write(Connection c) {
    try {
      c.channel.write(c.out);
    } catch (IOException e) {
      close(c);
      return;
    }
    if (!c.out.hasRemaining()) {
      close(c);
    }
  }

  private void close(Connection c) {
    open.remove(c);
    c.key.cancel();
    try {
      c.channel.close();
    } catch (IOException e) {
      // closing: nothing left to do with it
    }
  }

  private static String remote(Connection c) {
    try {
      return String.valueOf(c.channel.getRemoteAddress());
    } catch (IOException e) {
      return "?";
    }
  }

  /** The length of the request head including its blank line, or -1 while it is incomplete. */
  static int headEnd(ByteBuffer in) {
    byte[] b = in.array();
    for (int i = 0; i + 1 < in.position(); i++) {
      if (b[i] == '\n' && (b[i + 1] == '\n' || (b[i + 1] == '\r' && i + 2 < in.position() && b[i + 2] == '\n'))) {
        return i + (b[i + 1] == '\n' ? 2 : 3);
      }
    }
    return -1;
  }

  static Request parse(String head) {
    String[] lines = head.split("\r?\n");
    String[] first = lines[0].split(" ");
    if (first.length != 3 || !first[2].startsWith("HTTP/1.")) {
      throw new IllegalArgumentException("not an HTTP/1.x request line");
    }
    String target = first[1];
    int q = target.indexOf('?');
    String path = q < 0 ? target : target.substring(0, q);
    String query = q < 0 ? null : target.substring(q + 1);
    Map<String, List<String>> headers = new LinkedHashMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      if (colon <= 0) {
        continue;
      }
      headers.computeIfAbsent(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT), k -> new ArrayList<>())
          .add(lines[i].substring(colon + 1).trim());
    }
    return new Request(first[0], path, query, headers);
  }

  private static String reasonPhrase(int status) {
    return switch (status) {
      case 200 -> "OK";
      case 400 -> "Bad Request";
      case 404 -> "Not Found";
      case 405 -> "Method Not Allowed";
      case 431 -> "Request Header Fields Too Large";
      case 500 -> "Internal Server Error";
      case 503 -> "Service Unavailable";
      default -> "Status";
    };
  }

  @Override
  public void close() {
    running = false;
    selector.wakeup();
    try {
      loop.join(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    slowPool.shutdownNow();
    try {
      server.close();
      selector.close();
    } catch (IOException e) {
      // closing: nothing left to do with it
    }
  }
}

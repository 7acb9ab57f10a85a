package io.egressservice.informers;

import io.fabric8.kubernetes.client.KubernetesClientBuilder;
import io.fabric8.kubernetes.client.http.WebSocket;
import io.fabric8.kubernetes.client.http.WebSocketHandshakeException;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Keeps every watch honest about its connection, for what fabric8's JDK client does not do:
 * <ul>
 *   <li><b>A silent watch is abandoned.</b> A watch's WebSocket has no pings (fabric8 sets a ping interval only
 *   for OkHttp, and its WebSocket offers neither ping nor abort), so a connection that stays open and delivers
 *   nothing (a load balancer failing over, a lost NAT entry, a stuck peer) is trusted for good. Here a watch that
 *   received no frame (event or bookmark) for {@code idle} is ended as by a network error: fabric8 opens a new
 *   WebSocket (a new connection) from the informer's resourceVersion, the API server replays what it missed (or
 *   answers 410 Gone and the informer lists again). The old socket is closed, and whatever it still delivers is
 *   ignored. A healthy watch of a quiet kind is re-opened as well (it costs one watch request, replaying
 *   nothing); API servers with a watch cache send a bookmark about every minute, so with the default
 *   {@link #DEFAULT_IDLE} that happens only where they do not.</li>
 *   <li><b>410 Gone on the handshake lists again.</b> An API server (or a proxy in front of it) may answer a
 *   watch's upgrade request with HTTP status 410 instead of a 410 watch event. fabric8 treats that status as a
 *   network error and reconnects with the same resourceVersion for ever; here it is handed to the watch as the
 *   410 event it understands, so the informer lists again.</li>
 * </ul>
 * The requests (lists, GET /version) go over HTTP/1.1 ({@link #installOn}): a request that times out closes its
 * connection and the next one opens a new one, where one dead HTTP/2 connection would carry every request for
 * ever (the JDK client has no HTTP/2 health ping).
 */
public final class SilentWatches implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(SilentWatches.class);
  /** Longer than the API server's bookmark period (about a minute) with room for its jitter. */
  public static final Duration DEFAULT_IDLE = Duration.ofSeconds(90);
  static final String GONE_EVENT = "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"apiVersion\":\"v1\","
      + "\"metadata\":{},\"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410,"
      + "\"message\":\"the API server answered the watch request with HTTP status 410 Gone\"}}";

  private final Duration idle;
  private final Set<Guarded> open = ConcurrentHashMap.newKeySet();
  /** When each resource's watch last received a frame or was opened (System.nanoTime()), by resource path. */
  private final Map<String, Long> lastFrame = new ConcurrentHashMap<>();
  private final AtomicLong abandoned = new AtomicLong();
  private final AtomicLong goneHandshakes = new AtomicLong();
  private final ScheduledExecutorService checker = Executors.newSingleThreadScheduledExecutor(r -> {
    Thread t = new Thread(r, "silent-watches");
    t.setDaemon(true);
    return t;
  });

  public SilentWatches(Duration idle) {
    if (idle.isNegative() || idle.isZero()) {
      throw new IllegalArgumentException("the watch idle timeout must be positive: " + idle);
    }
    this.idle = idle;
    long every = Math.max(100, Math.min(1000, idle.toMillis() / 4));
    checker.scheduleWithFixedDelay(this::abandonSilent, every, every, TimeUnit.MILLISECONDS);
  }

  /** Builds clients through it: every watch guarded, every request over HTTP/1.1. */
  public KubernetesClientBuilder installOn(KubernetesClientBuilder builder) {
    return builder.withHttpClientFactory(GuardedHttpClient.factory(this));
  }

  public Duration idle() {
    return idle;
  }

  /** Watches ended because they delivered nothing for {@link #idle()}. */
  public long abandoned() {
    return abandoned.get();
  }

  /** Watch handshakes answered 410 Gone, handed to their watch as a 410 event. */
  public long goneHandshakes() {
    return goneHandshakes.get();
  }

  /**
   * Seconds since the watch of each resource (its path without the query, e.g.
   * {@code /apis/discovery.k8s.io/v1/endpointslices}) last received a frame (an event or a bookmark) or was opened.
   */
  public Map<String, Double> idleSeconds() {
    long now = System.nanoTime();
    Map<String, Double> out = new java.util.TreeMap<>();
    lastFrame.forEach((resource, at) -> out.put(resource, (now - at) / 1e9));
    return out;
  }

  /** Opens a watch's WebSocket, to {@code uri}, with {@code listener} behind the guard. */
  CompletableFuture<WebSocket> open(WebSocket.Builder builder, URI uri, WebSocket.Listener listener) {
    Guarded guarded = new Guarded(listener, uri == null || uri.getPath() == null ? "" : uri.getPath());
    return builder.buildAsync(guarded).exceptionallyCompose(error -> {
      Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
      if (cause instanceof WebSocketHandshakeException handshake && handshake.getResponse() != null
          && handshake.getResponse().code() == 410) {
        goneHandshakes.incrementAndGet();
        LOG.debug("a watch handshake was answered 410 Gone: the informer lists again");
        WebSocket closed = new ClosedSocket();
        // after fabric8 has the socket: the event then ends this watch as a 410 event does
        CompletableFuture.runAsync(() -> {
          listener.onOpen(closed);
          listener.onMessage(closed, GONE_EVENT);
        }, CompletableFuture.delayedExecutor(10, TimeUnit.MILLISECONDS));
        return CompletableFuture.completedFuture(closed);
      }
      return CompletableFuture.failedFuture(error);
    });
  }

  private void abandonSilent() {
    long now = System.nanoTime();
    for (Guarded g : open) {
      if (now - g.lastFrameNanos.get() >= idle.toNanos()) {
        g.abandon(now);
      }
    }
  }

  @Override
  public void close() {
    checker.shutdownNow();
  }

  /** One watch's listener: passes every callback on until the watch is abandoned, then none. */
  private final class Guarded implements WebSocket.Listener {
    final WebSocket.Listener watch;
    final String resource;
    final AtomicLong lastFrameNanos = new AtomicLong(System.nanoTime());
    final AtomicBoolean ended = new AtomicBoolean();
    volatile WebSocket socket;

    Guarded(WebSocket.Listener watch, String resource) {
      this.watch = watch;
      this.resource = resource;
    }

    void framed() {
      long now = System.nanoTime();
      lastFrameNanos.set(now);
      if (!ended.get()) {
        lastFrame.put(resource, now);
      }
    }

    void abandon(long now) {
      if (!ended.compareAndSet(false, true)) {
        return;
      }
      open.remove(this);
      abandoned.incrementAndGet();
      long silentSeconds = TimeUnit.NANOSECONDS.toSeconds(now - lastFrameNanos.get());
      LOG.debug("a watch delivered nothing for {} s: re-opening it on a new connection", silentSeconds);
      WebSocket ws = socket;
      watch.onError(ws, new SocketTimeoutException("the watch delivered nothing for " + silentSeconds + " s"));
      if (ws != null) {
        ws.sendClose(1000, "silent for " + silentSeconds + " s");
      }
    }

    @Override
    public void onOpen(WebSocket webSocket) {
      socket = webSocket;
      framed();
      open.add(this);
      watch.onOpen(webSocket);
    }

    @Override
    public void onMessage(WebSocket webSocket, String text) {
      framed();
      if (ended.get()) {
        webSocket.request();
        return;
      }
      watch.onMessage(webSocket, text);
    }

    @Override
    public void onMessage(WebSocket webSocket, ByteBuffer bytes) {
      framed();
      if (ended.get()) {
        webSocket.request();
        return;
      }
      watch.onMessage(webSocket, bytes);
    }

    @Override
    public void onClose(WebSocket webSocket, int code, String reason) {
      open.remove(this);
      if (ended.compareAndSet(false, true)) {
        watch.onClose(webSocket, code, reason);
      }
    }

    @Override
    public void onError(WebSocket webSocket, Throwable error) {
      open.remove(this);
      if (ended.compareAndSet(false, true)) {
        watch.onError(webSocket, error);
      }
    }
  }

  /** The socket of a watch whose handshake was refused: sends nothing, closed from the start. */
  private static final class ClosedSocket implements WebSocket {
    @Override
    public boolean send(ByteBuffer buffer) {
      return false;
    }

    @Override
    public boolean sendClose(int code, String reason) {
      return false;
    }

    @Override
    public long queueSize() {
      return 0;
    }

    @Override
    public void request() {
      // nothing more will come
    }
  }
}

package io.egressservice.informers;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Whether the agent hears from the API server, per kind watched: the watch of each informer is polled
 * twice a second ({@code isWatching()}: the informer re-lists and re-watches on its own, silently). A
 * kind whose watch has been down for {@link #LOSS_GRACE} is a lost contact, logged once with the last
 * error; its return is logged with how long it lasted. Watches also drop and come back in normal
 * operation (the API server closes each one after a while): the grace keeps those out of the log.
 *
 * <p>An open watch is not proof that the API server answers: one that hangs (accepts connections, never
 * answers: stopped, overloaded, or a black-holing network in between) leaves every watch open and silent. So
 * when nothing has been heard for {@link Probing#quiet()} (no event from any watch, no answer to a probe), one
 * cheap request ({@code GET /version}) asks; while it is unanswered for longer than {@link Probing#timeout()}, or
 * failed and nothing was heard since, every kind counts as down, as with a refused connection. Any HTTP answer
 * counts as heard (a 403 is a server that answers). Like client-go's HTTP/2 health check (a ping after an idle
 * read timeout), it costs nothing while events flow: one request per quiet period per node otherwise.
 *
 * <p>{@link #lastContactAgeSeconds} is the metric's value: seconds since the kind's watch was last seen
 * established with the API server answering (since the start while it never was).
 */
public final class ApiConnectivity implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ApiConnectivity.class);
  static final Duration LOSS_GRACE = Duration.ofSeconds(3);
  private static final long POLL_MILLIS = 500;

  /** A request that any answer of the API server completes; throws when none came. */
  @FunctionalInterface
  public interface Probe {
    void ask() throws Exception;
  }

  /**
   * When to ask and how long to wait: a probe after {@code quiet} without hearing anything, an answer expected
   * within {@code timeout}.
   */
  public record Probing(Probe probe, Duration quiet, Duration timeout) {
    public static final Duration QUIET = Duration.ofSeconds(10);
    public static final Duration TIMEOUT = Duration.ofSeconds(5);

    public Probing {
      java.util.Objects.requireNonNull(probe);
      if (quiet.isNegative() || quiet.isZero() || timeout.isNegative() || timeout.isZero()) {
        throw new IllegalArgumentException("quiet and timeout must be positive: " + quiet + ", " + timeout);
      }
    }
  }

  private static final class Kind {
    final String name;
    final SharedIndexInformer<? extends HasMetadata> informer;
    volatile long lastContactNanos;
    volatile boolean watching;
    volatile String lastError = "";
    volatile boolean errorLogged;
    /** Failures in a row since the kind was last watching (the informer's backoff follows it). */
    volatile int failures;

    Kind(String name, SharedIndexInformer<? extends HasMetadata> informer, long now) {
      this.name = name;
      this.informer = informer;
      this.lastContactNanos = now;
    }
  }

  private final Map<String, Kind> kinds = new LinkedHashMap<>();
  private final Probing probing;
  /** The API server's URL, for the log. */
  private final String server;
  /** The informers' first retry delay (the client's watch reconnect interval). */
  private final Duration reconnectInterval;
  /** When the API server was last heard: an event of a watch, or an answer to a probe (System.nanoTime()). */
  private volatile long lastHeardNanos;
  /** When the probe in flight was sent; 0 when none is. */
  private volatile long probeSentNanos;
  /** Why the last probe got no answer; empty when it got one (or none failed yet). */
  private volatile String probeError = "";
  private final Thread prober;
  private final Thread poller;
  private volatile boolean running = true;
  private boolean everConnected;
  private boolean lost;
  private long lostSinceNanos;

  ApiConnectivity(List<SharedIndexInformer<? extends HasMetadata>> informers, Probing probing, String server,
      Duration reconnectInterval) {
    this.server = server;
    this.reconnectInterval = reconnectInterval;
    long now = System.nanoTime();
    for (SharedIndexInformer<? extends HasMetadata> i : informers) {
      String name = i.getApiTypeClass().getSimpleName();
      kinds.put(name, new Kind(name, i, now));
    }
    this.probing = probing;
    this.lastHeardNanos = now;
    poller = new Thread(this::run, "api-connectivity");
    poller.setDaemon(true);
    prober = new Thread(this::probeWhenQuiet, "api-probe");
    prober.setDaemon(true);
  }

  void start() {
    poller.start();
    prober.start();
  }

  /** A watch delivered an event (not a resync from the cache): the API server answers. */
  void heard() {
    lastHeardNanos = System.nanoTime();
  }

  private void probeWhenQuiet() {
    long checkMillis = Math.max(10, Math.min(POLL_MILLIS, probing.quiet().toMillis() / 4));
    while (running) {
      try {
        if (System.nanoTime() - lastHeardNanos >= probing.quiet().toNanos()) {
          probeOnce();
        }
        Thread.sleep(checkMillis);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  /** Blocks as long as the request does (the client's own timeout ends it); {@link #poll} judges the wait. */
  private void probeOnce() {
    long sent = System.nanoTime();
    probeSentNanos = sent;
    try {
      probing.probe().ask();
      answered(sent);
    } catch (io.fabric8.kubernetes.client.KubernetesClientException e) {
      if (e.getCode() > 0) {
        answered(sent); // an HTTP status: the server answers, whatever it thinks of the request
      } else {
        probeFailed(e);
      }
    } catch (Exception e) {
      if (e instanceof InterruptedException) {
        Thread.currentThread().interrupt();
      }
      probeFailed(e);
    } finally {
      probeSentNanos = 0;
    }
  }

  private void answered(long sent) {
    probeError = "";
    lastHeardNanos = Math.max(lastHeardNanos, sent);
  }

  private void probeFailed(Exception e) {
    probeError = "GET /version: " + message(e);
  }

  /**
   * Why the API server counts as not answering now, or empty when it does: a probe unanswered for longer than the
   * timeout, or one that failed with nothing heard since.
   */
  private java.util.Optional<String> notAnswering(long now) {
    long sent = probeSentNanos;
    if (sent != 0 && now - sent >= probing.timeout().toNanos()) {
      return java.util.Optional.of("the API server has not answered GET /version for "
          + TimeUnit.NANOSECONDS.toSeconds(now - sent) + " s (nothing heard for "
          + TimeUnit.NANOSECONDS.toSeconds(now - lastHeardNanos) + " s)");
    }
    String error = probeError;
    if (!error.isEmpty() && now - lastHeardNanos >= probing.quiet().toNanos()) {
      return java.util.Optional.of(error);
    }
    return java.util.Optional.empty();
  }

  /** The kinds watched, by their simple class name (EgressService, Service, EndpointSlice, Node). */
  public List<String> kinds() {
    return List.copyOf(kinds.keySet());
  }

  public double lastContactAgeSeconds(String kind) {
    Kind k = kinds.get(kind);
    return k == null ? Double.NaN : (System.nanoTime() - k.lastContactNanos) / 1e9;
  }

  public boolean watching(String kind) {
    Kind k = kinds.get(kind);
    return k != null && k.watching;
  }

  /**
   * The kinds whose watch has been down (re-listing, unreachable, or the API server not answering) for at least
   * {@code bound}: what {@code /readyz} refuses on, and what makes the view stale.
   */
  public List<String> downFor(Duration bound) {
    return List.copyOf(downAges(bound).keySet());
  }

  /** {@link #downFor}, each kind with the seconds since its watch was last up. */
  public Map<String, Double> downAges(Duration bound) {
    double boundSeconds = bound.toNanos() / 1e9;
    Map<String, Double> down = new LinkedHashMap<>();
    for (String k : kinds.keySet()) {
      double age = lastContactAgeSeconds(k);
      if (!watching(k) && age >= boundSeconds) {
        down.put(k, age);
      }
    }
    return java.util.Collections.unmodifiableMap(down);
  }

  /** Whether every kind's watch is established and the API server answers: objects read now are fresh. */
  public boolean allWatching() {
    return kinds.values().stream().allMatch(k -> k.watching);
  }

  /**
   * An informer's list or watch failed (its exception handler): logged the first time since the kind was
   * last watching, at debug after that (the informer retries with backoff; the loss line sums it up).
   */
  void failed(String kind, Throwable error) {
    Kind k = kinds.get(kind);
    String message = message(error);
    if (k == null) {
      LOG.warn("cannot reach the API server {} ({}): {}; retrying, what the agent applied is kept", server, kind,
          message);
      LOG.debug("{}: the error's trace", kind, error);
      return;
    }
    k.lastError = message;
    int failures = k.failures++;
    String next = "next retry in about " + retryDelay(failures).toSeconds() + " s";
    if (!k.errorLogged) {
      k.errorLogged = true;
      LOG.warn("cannot reach the API server {} ({} list/watch): {}; {}, what the agent applied is kept", server,
          kind, message, next);
    } else {
      LOG.debug("cannot reach the API server {} ({} list/watch): {}; {}", server, kind, message, next);
    }
    LOG.debug("{} list/watch: the error's trace", kind, error);
  }

  /** The error and its causes' messages, without repeats: fabric8 wraps the one that says what happened. */
  static String message(Throwable error) {
    java.util.LinkedHashSet<String> parts = new java.util.LinkedHashSet<>();
    for (Throwable t = error; t != null && parts.size() < 4; t = t.getCause() == t ? null : t.getCause()) {
      String m = t.getMessage() == null ? t.getClass().getSimpleName()
          : t.getClass().getSimpleName() + ": " + t.getMessage();
      if (parts.stream().noneMatch(p -> p.contains(m))) {
        parts.add(m);
      }
    }
    return String.join(": ", parts);
  }

  /**
   * The wait before the informer's next try after {@code failures} earlier failures in a row: fabric8's Reflector
   * doubles its watch reconnect interval on each, up to 32 times it.
   */
  Duration retryDelay(int failures) {
    return reconnectInterval.multipliedBy(1L << Math.min(failures, 5));
  }

  private void run() {
    while (running) {
      poll(System.nanoTime());
      try {
        Thread.sleep(POLL_MILLIS);
      } catch (InterruptedException e) {
        return;
      }
    }
  }

  synchronized void poll(long now) {
    List<Kind> down = new ArrayList<>();
    java.util.Optional<String> silent = notAnswering(now);
    for (Kind k : kinds.values()) {
      k.watching = k.informer.isWatching() && silent.isEmpty();
      silent.ifPresent(why -> k.lastError = why);
      if (k.watching) {
        k.lastContactNanos = now;
        k.errorLogged = false;
        k.failures = 0;
      } else if (now - k.lastContactNanos >= LOSS_GRACE.toNanos()) {
        down.add(k);
      }
    }
    boolean allWatching = kinds.values().stream().allMatch(k -> k.watching);
    everConnected = everConnected || allWatching;
    if (!lost && everConnected && !down.isEmpty()) {
      lost = true;
      lostSinceNanos = down.stream().mapToLong(k -> k.lastContactNanos).min().orElse(now);
      String errors = down.stream().map(k -> k.lastError).filter(e -> !e.isEmpty()).distinct()
          .reduce((a, b) -> a + "; " + b).map(e -> " (last error: " + e + ")").orElse("");
      LOG.warn("lost contact with the API server: no watch of {} from {} for {} s{}; the kernel keeps what was"
          + " applied and drift is still repaired from the cached objects; retrying", names(down), server,
          TimeUnit.NANOSECONDS.toSeconds(now - lostSinceNanos), errors);
    } else if (lost && allWatching) {
      lost = false;
      LOG.info("API server reachable again after {} s: the watches of {} are re-established and the caches caught up",
          String.format("%.1f", (now - lostSinceNanos) / 1e9), names(kinds.values()));
    }
  }

  private static String names(java.util.Collection<Kind> ks) {
    return String.join(", ", ks.stream().map(k -> k.name).toList());
  }

  @Override
  public void close() {
    running = false;
    poller.interrupt();
    prober.interrupt();
  }
}

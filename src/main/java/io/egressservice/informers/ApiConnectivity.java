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
 * <p>{@link #lastContactAgeSeconds} is the metric's value: seconds since the kind's watch was last seen
 * established (since the start while it never was).
 */
public final class ApiConnectivity implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(ApiConnectivity.class);
  static final Duration LOSS_GRACE = Duration.ofSeconds(3);
  private static final long POLL_MILLIS = 500;

  private static final class Kind {
    final String name;
    final SharedIndexInformer<? extends HasMetadata> informer;
    volatile long lastContactNanos;
    volatile boolean watching;
    volatile String lastError = "";
    volatile boolean errorLogged;

    Kind(String name, SharedIndexInformer<? extends HasMetadata> informer, long now) {
      this.name = name;
      this.informer = informer;
      this.lastContactNanos = now;
    }
  }

  private final Map<String, Kind> kinds = new LinkedHashMap<>();
  private final Thread poller;
  private volatile boolean running = true;
  private boolean everConnected;
  private boolean lost;
  private long lostSinceNanos;

  ApiConnectivity(List<SharedIndexInformer<? extends HasMetadata>> informers) {
    long now = System.nanoTime();
    for (SharedIndexInformer<? extends HasMetadata> i : informers) {
      String name = i.getApiTypeClass().getSimpleName();
      kinds.put(name, new Kind(name, i, now));
    }
    poller = new Thread(this::run, "api-connectivity");
    poller.setDaemon(true);
  }

  void start() {
    poller.start();
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
   * An informer's list or watch failed (its exception handler): logged the first time since the kind was
   * last watching, at debug after that (the informer retries with backoff; the loss line sums it up).
   */
  void failed(String kind, Throwable error) {
    Kind k = kinds.get(kind);
    String message = error.getMessage() == null ? error.getClass().getSimpleName() : error.getMessage();
    if (k == null) {
      LOG.warn("{} informer: {} (retrying; what the agent applied is kept)", kind, message);
      return;
    }
    k.lastError = message;
    if (!k.errorLogged) {
      k.errorLogged = true;
      LOG.warn("{} informer: {} (retrying; what the agent applied is kept)", kind, message);
    } else {
      LOG.debug("{} informer: {} (retrying)", kind, message);
    }
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
    for (Kind k : kinds.values()) {
      k.watching = k.informer.isWatching();
      if (k.watching) {
        k.lastContactNanos = now;
        k.errorLogged = false;
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
      LOG.warn("lost contact with the API server: no watch of {} for {} s{}; the kernel keeps what was applied and"
          + " drift is still repaired from the cached objects; retrying", names(down),
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
  }
}

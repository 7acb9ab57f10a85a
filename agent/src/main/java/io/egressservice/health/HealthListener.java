package io.egressservice.health;

import java.io.IOException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A {@link HealthServer} that is bound now or as soon as its port is free. Another process holding the port (one
 * that started first) must not keep the agent from programming its node: the agent goes on reconciling, says which
 * process holds the port, and tries again (every {@code 0.5, 1, 2, 2, ...} s) until it has the port. Meanwhile
 * nothing answers the probes: the kubelet sees the readiness probe fail (the pod is not ready), and the allocator
 * does not take the other process's answers for the agent's ({@link ProbeIdentity}).
 */
public final class HealthListener implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(HealthListener.class);
  private static final Duration FIRST_RETRY = Duration.ofMillis(500);
  private static final Duration REPEAT_SAME_WARNING = Duration.ofSeconds(30);

  /** Binds the server once (throws when the port is taken). */
  public interface Binder {
    HealthServer bind() throws IOException;
  }

  private final String what;
  private final Binder binder;
  private final Supplier<String> holder;
  private final Duration maxRetry;
  private final ScheduledExecutorService retries;
  private final long startNanos = System.nanoTime();
  private volatile Optional<HealthServer> server = Optional.empty();
  private boolean closed;
  private String lastWarning = "";
  private long lastWarningNanos;

  private HealthListener(String what, Binder binder, Supplier<String> holder, Duration maxRetry) {
    this.what = Objects.requireNonNull(what);
    this.binder = Objects.requireNonNull(binder);
    this.holder = Objects.requireNonNull(holder);
    this.maxRetry = Objects.requireNonNull(maxRetry);
    this.retries = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "http-bind-retry");
      t.setDaemon(true);
      return t;
    });
  }

  /**
   * Binds at once if it can, else keeps trying in the background.
   *
   * @param what the listener in messages, e.g. "/metrics, /healthz and /readyz on 0.0.0.0:9464"
   * @param holder who holds the port (called after a failed bind: {@link PortHolder#describe})
   * @param maxRetry the longest wait between two attempts
   */
  public static HealthListener start(String what, Binder binder, Supplier<String> holder, Duration maxRetry) {
    HealthListener l = new HealthListener(what, binder, holder, maxRetry);
    l.attempt(FIRST_RETRY);
    return l;
  }

  /** The server, once bound. */
  public Optional<HealthServer> server() {
    return server;
  }

  /** Whether it answers now, or still tries to bind (false once its server's thread has ended: see FailFast). */
  public boolean serving() {
    Optional<HealthServer> s = server;
    return s.map(HealthServer::serving).orElseGet(() -> !retries.isShutdown());
  }

  private void attempt(Duration nextWait) {
    synchronized (this) {
      if (closed) {
        return;
      }
      try {
        HealthServer s = binder.bind();
        server = Optional.of(s);
        if (!lastWarning.isEmpty()) {
          LOG.info("{}: listening now, after {} s", what,
              TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - startNanos));
        }
        retries.shutdown();
        return;
      } catch (IOException | RuntimeException e) {
        warn(e);
      }
      try {
        retries.schedule(() -> attempt(min(nextWait.multipliedBy(2), maxRetry)), nextWait.toMillis(),
            TimeUnit.MILLISECONDS);
      } catch (RejectedExecutionException e) {
        // closing
      }
    }
  }

  private void warn(Exception e) {
    String why = String.valueOf(e.getMessage());
    String who = why.contains("in use") ? "; held by " + holder.get() : "";
    String warning = "cannot listen for " + what + ": " + why + who;
    long now = System.nanoTime();
    if (!warning.equals(lastWarning) || now - lastWarningNanos >= REPEAT_SAME_WARNING.toNanos()) {
      LOG.warn("{}; the agent keeps working and tries again every {} s at most (until then the probes fail)",
          warning, maxRetry.toSeconds());
      lastWarning = warning;
      lastWarningNanos = now;
    }
  }

  private static Duration min(Duration a, Duration b) {
    return a.compareTo(b) <= 0 ? a : b;
  }

  @Override
  public void close() {
    synchronized (this) {
      closed = true;
      retries.shutdownNow();
    }
    server.ifPresent(HealthServer::close);
  }
}

package io.egressservice.reconcile;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.DoubleConsumer;
import org.slf4j.Logger;

/**
 * One reconcile worker, shared by the node agent and the allocator: triggers mark the work dirty and any number of
 * them make one reconcile ({@link Triggers}); reconciles start no closer together than the {@link Pace} allows; a
 * failed one is retried after a {@link Backoff} (a change of the inputs does not wait for it); the periodic resync
 * runs the same reconcile at the latest every resync period; the worker's wait wakes at least every second, which is
 * what {@link #liveness()} reports. The owner gives the reconcile itself ({@link Work}), knows nothing of the thread,
 * and configures the hooks below before {@link #start()}.
 *
 * <p>Nothing reconciles before the owner's start condition holds ({@link #startWhen}): the node agent's informers
 * must have synced, so an empty cache never prunes the kernel. Closing stops after the reconcile in progress.
 */
public final class ReconcileLoop implements AutoCloseable {
  /** The first reconcile, once the start condition holds. */
  public static final String STARTUP = "startup";
  /** The periodic resync. */
  public static final String RESYNC = "resync";
  /** Another attempt after a failure, with no new cause. */
  public static final String RETRY = "retry";
  static final Set<String> OWN_CAUSES = Set.of(STARTUP, RESYNC, RETRY);
  /** The wait wakes at least every second: a loop not seen awake for this long is stuck. */
  static final long STUCK_AFTER_SECONDS = 120;
  /** How often the start condition is polled (a trigger wakes the poll earlier). */
  private static final long START_POLL_MILLIS = 50;

  /** One reconcile; true when everything was applied. A throw counts as a failure. */
  @FunctionalInterface
  public interface Work {
    boolean reconcile(Due due);
  }

  /** Told of each failure before its retry waits: the failures in a row and the wait. */
  @FunctionalInterface
  public interface RetryLog {
    void retrying(int failures, long delayMillis);
  }

  /**
   * How far apart reconciles start: {@code min} while changes come at a calm rate, doubling up to {@code max} while
   * a burst lasts ({@link Pacing}); {@code min == max} is a fixed spacing.
   */
  public record Pace(Duration min, Duration max) {
    /** The node agent's: 25 ms, up to 1 s in a burst of API events. */
    public static final Pace ADAPTIVE = new Pace(Duration.ofNanos(Pacing.MIN_INTERVAL_NANOS),
        Duration.ofNanos(Pacing.MAX_INTERVAL_NANOS));

    public static Pace fixed(Duration spacing) {
      return new Pace(spacing, spacing);
    }
  }

  /**
   * @param name the worker thread's name
   * @param resync the longest time between two resyncs; zero for none. A reconcile of any cause that ends past the
   *     resync time counts as the resync (the node agent's: a cold start's long full reconcile is not followed at once
   *     by another); an owner that needs a full pass every period asks for one with {@link #every}
   * @param log the owner's logger: the loop's lines read as part of its log
   */
  public record Settings(String name, Duration resync, Pace pace, Backoff backoff, Logger log) {
    public Settings {
      Objects.requireNonNull(name);
      Objects.requireNonNull(pace);
      Objects.requireNonNull(backoff);
      Objects.requireNonNull(log);
      if (resync.isNegative()) {
        throw new IllegalArgumentException("resync must not be negative, not " + resync);
      }
    }
  }

  /**
   * The work waiting for the worker: triggers received since the last reconcile began, and how long the oldest of
   * them has waited (0 when none waits), like controller-runtime's work-queue depth and its oldest item's age.
   */
  public record Pending(int triggers, double oldestSeconds) {}

  /** Whether the worker runs and has woken within {@link #STUCK_AFTER_SECONDS}; how long ago it last woke. */
  public record Liveness(boolean alive, long idleSeconds) {}

  private final Settings settings;
  private final Work work;
  private final Triggers triggers;
  private final CountDownLatch stopped = new CountDownLatch(1);
  private final Object idleLock = new Object();
  private boolean busy;
  private volatile long lastAwakeNanos = System.nanoTime();
  private volatile Thread worker;

  private BooleanSupplier ready = () -> true;
  private Runnable onReady = () -> { };
  private String waitingFor = "the start condition";
  private String idleCause = "idle";
  private BooleanSupplier idleCheck = () -> false;
  private DoubleConsumer intervalSeconds = s -> { };
  private RetryLog retryLog;
  private final List<Periodic> periodic = new ArrayList<>();

  public ReconcileLoop(Settings settings, Work work) {
    this.settings = settings;
    this.work = Objects.requireNonNull(work);
    Pace pace = settings.pace();
    this.triggers = new Triggers(new Pacing(pace.min().toNanos(), pace.max().toNanos()), settings.log(),
        () -> idleCheck.getAsBoolean(), () -> idleCause, () -> lastAwakeNanos = System.nanoTime(),
        s -> intervalSeconds.accept(s));
    this.retryLog = (failures, delay) -> settings.log().info("retrying in {} ms (attempt {})", delay, failures + 1);
  }

  /**
   * No reconcile runs until {@code condition} holds (polled every 50 ms, logged every 10 s as waiting for
   * {@code waitingFor}); then {@code onReady} runs once on the worker and the {@link #STARTUP} reconcile is due.
   */
  public ReconcileLoop startWhen(BooleanSupplier condition, Runnable onReady, String waitingFor) {
    this.ready = Objects.requireNonNull(condition);
    this.onReady = Objects.requireNonNull(onReady);
    this.waitingFor = Objects.requireNonNull(waitingFor);
    return this;
  }

  /**
   * Asked each time the idle wait wakes (at least every second) while nothing is due: true makes a reconcile named
   * {@code cause} due, for work no trigger tells of.
   */
  public ReconcileLoop whenIdle(String cause, BooleanSupplier check) {
    this.idleCause = Objects.requireNonNull(cause);
    this.idleCheck = Objects.requireNonNull(check);
    return this;
  }

  /** Told the pacing interval, in seconds, as each reconcile starts. */
  public ReconcileLoop onInterval(DoubleConsumer seconds) {
    this.intervalSeconds = Objects.requireNonNull(seconds);
    return this;
  }

  /** Replaces the loop's log line for a retry ("retrying in N ms (attempt N)"). */
  public ReconcileLoop onRetry(RetryLog log) {
    this.retryLog = Objects.requireNonNull(log);
    return this;
  }

  /**
   * Runs {@code task} on the worker every {@code period} (after each run, as a fixed delay), between reconciles: it
   * never runs beside one, so it may read what only the worker writes. A throw is logged and the task runs again.
   */
  public ReconcileLoop every(Duration period, Runnable task) {
    if (period.isNegative() || period.isZero()) {
      throw new IllegalArgumentException("a periodic task needs a positive period, not " + period);
    }
    periodic.add(new Periodic(period.toNanos(), Objects.requireNonNull(task)));
    return this;
  }

  /** Starts the worker; returns at once. Triggers that came before are kept. */
  public synchronized void start() {
    if (worker != null) {
      throw new IllegalStateException("the reconcile loop " + settings.name() + " is started already");
    }
    triggers.start();
    periodic.forEach(p -> p.nextNanos = System.nanoTime() + p.periodNanos);
    Thread t = new Thread(this::run, settings.name());
    t.setDaemon(true);
    worker = t;
    t.start();
  }

  /** Something may need reconciling (drift, say): one reconcile for any number of triggers; waits out a backoff. */
  public void trigger(String cause) {
    triggers.trigger(cause);
  }

  /** The inputs changed: like {@link #trigger}, but not held by a failure's backoff, and counted for the pacing. */
  public void changed(String cause) {
    triggers.changed(cause);
  }

  /** A reconcile as soon as the worker is free, held by neither the pacing nor a backoff. */
  public void now(String cause) {
    triggers.now(cause);
  }

  public Pending pending() {
    return triggers.pending();
  }

  public Liveness liveness() {
    long idle = TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - lastAwakeNanos);
    Thread t = worker;
    // Stopped counts as dead at once: the worker thread may still be finishing after it counted down.
    boolean running = t != null && stopped.getCount() > 0 && t.isAlive();
    return new Liveness(running && idle < STUCK_AFTER_SECONDS, idle);
  }

  /** Waits, at most {@code timeout}, until no reconcile (or periodic task) is running; true if none is. */
  public boolean awaitIdle(Duration timeout) {
    long deadline = System.nanoTime() + timeout.toNanos();
    synchronized (idleLock) {
      try {
        long left;
        while (busy && (left = deadline - System.nanoTime()) > 0) {
          TimeUnit.NANOSECONDS.timedWait(idleLock, left);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      return !busy;
    }
  }

  /** Stops after the reconcile in progress, waiting for it at most {@code timeout}; true if the worker stopped. */
  public boolean close(Duration timeout) {
    triggers.stop();
    if (worker == null) {
      return true;
    }
    try {
      if (stopped.await(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
        return true;
      }
      settings.log().warn("the reconcile worker did not stop within {} s", timeout.toSeconds());
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    return false;
  }

  /** {@link #close(Duration)} with 30 s. */
  @Override
  public void close() {
    close(Duration.ofSeconds(30));
  }

  private void run() {
    try {
      awaitStart();
      long nextResync = resyncAfter(System.nanoTime());
      long notBefore = 0;
      int failures = 0;
      while (triggers.running()) {
        lastAwakeNanos = System.nanoTime();
        runPeriodic();
        Optional<Due> due = triggers.awaitDue(nextResync, notBefore, failures > 0, nextPeriodic());
        if (due.isEmpty()) {
          continue; // stopped, or a periodic task is due
        }
        String cause = due.get().cause();
        if (reconcile(due.get())) {
          failures = 0;
          notBefore = 0;
        } else {
          failures++;
          long delay = settings.backoff().delayMillis(failures);
          notBefore = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delay);
          retryLog.retrying(failures, delay);
          triggers.retry();
        }
        if (RESYNC.equals(cause) || System.nanoTime() >= nextResync) {
          nextResync = resyncAfter(System.nanoTime());
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      stopped.countDown();
    }
  }

  private void awaitStart() throws InterruptedException {
    long lastLog = 0;
    while (triggers.running()) {
      if (ready.getAsBoolean()) {
        onReady.run();
        triggers.started();
        return;
      }
      if (System.nanoTime() - lastLog > TimeUnit.SECONDS.toNanos(10)) {
        settings.log().info("waiting for {}", waitingFor);
        lastLog = System.nanoTime();
      }
      lastAwakeNanos = System.nanoTime();
      triggers.pause(START_POLL_MILLIS);
    }
  }

  private long resyncAfter(long now) {
    return settings.resync().isZero() ? Long.MAX_VALUE : now + settings.resync().toNanos();
  }

  private boolean reconcile(Due due) {
    setBusy(true);
    try {
      return work.reconcile(due);
    } catch (RuntimeException e) {
      settings.log().error("reconcile ({}) failed: {}", due.cause(), e.getMessage(), e);
      return false;
    } finally {
      setBusy(false);
    }
  }

  private void setBusy(boolean b) {
    synchronized (idleLock) {
      busy = b;
      idleLock.notifyAll();
    }
  }

  private long nextPeriodic() {
    long next = Long.MAX_VALUE;
    for (Periodic p : periodic) {
      next = Math.min(next, p.nextNanos);
    }
    return next;
  }

  private void runPeriodic() {
    for (Periodic p : periodic) {
      if (System.nanoTime() < p.nextNanos) {
        continue;
      }
      setBusy(true);
      try {
        p.task.run();
      } catch (RuntimeException e) {
        settings.log().warn("{}: periodic task failed: {}", settings.name(), e.toString());
      } finally {
        setBusy(false);
        p.nextNanos = System.nanoTime() + p.periodNanos;
      }
    }
  }

  /** A task the worker runs every period; worker thread only after {@link #start()}. */
  private static final class Periodic {
    final long periodNanos;
    final Runnable task;
    long nextNanos;

    Periodic(long periodNanos, Runnable task) {
      this.periodNanos = periodNanos;
      this.task = task;
    }
  }
}

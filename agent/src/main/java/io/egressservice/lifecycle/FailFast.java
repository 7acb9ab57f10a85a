package io.egressservice.lifecycle;

import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;

/**
 * Ends the process when it cannot go on, so that Kubernetes restarts it, instead of leaving it up, never ready and
 * never restarted:
 *
 * <ul>
 *   <li>an {@link Error} (an {@link OutOfMemoryError}, a {@link StackOverflowError}, a class that failed to
 *       initialize...) that reaches the top of any thread: exit {@value #EXIT_FATAL_ERROR}, the status
 *       {@code -XX:+ExitOnOutOfMemoryError} exits with. The manifests and the image set that flag, which also sees
 *       the errors a library catches (an executor keeps them in its futures, where no handler sees them); this
 *       covers a process started without it ({@code java -jar} by hand, tests) and every other Error;
 *   <li>an {@linkplain #essential essential} thread that ended, of an exception or not: exit
 *       {@value #EXIT_ESSENTIAL_THREAD_ENDED}, within one check period. A thread that is alive but stuck is not
 *       this class's business: {@code /healthz} reports it and the liveness probe restarts the pod.
 * </ul>
 *
 * <p>Before it logs the reason it arms a second thread that ends the process after a bounded time whatever
 * happens to the log: a process out of memory may not manage to log at all, and a blocked stderr must not keep it
 * alive.
 */
public final class FailFast implements Thread.UncaughtExceptionHandler, AutoCloseable {
  /** An Error reached the top of a thread (the JVM's own status for {@code -XX:+ExitOnOutOfMemoryError}). */
  public static final int EXIT_FATAL_ERROR = 3;
  /** An essential thread ended. */
  public static final int EXIT_ESSENTIAL_THREAD_ENDED = 4;

  private record Essential(String role, BooleanSupplier alive) {}

  private final ExitAction exit;
  private final FatalLog log;
  private final long checkNanos;
  private final long logBoundNanos;
  private final List<Essential> essentials = new CopyOnWriteArrayList<>();
  private final AtomicBoolean ending = new AtomicBoolean();
  private final AtomicBoolean exited = new AtomicBoolean();
  private final Thread watchdog;
  private final Thread halter;
  /** The status the halter exits with once {@link #haltAtNanos} has passed; -1: not armed. */
  private volatile int haltStatus = -1;
  private volatile long haltAtNanos;
  private volatile boolean stopping;
  private volatile boolean closed;

  /**
   * @param checkPeriod how often the essential threads are checked
   * @param logBound how long the reason may take to be logged before the process ends anyway
   */
  public FailFast(ExitAction exit, FatalLog log, Duration checkPeriod, Duration logBound) {
    this.exit = Objects.requireNonNull(exit);
    this.log = Objects.requireNonNull(log);
    this.checkNanos = checkPeriod.toNanos();
    this.logBoundNanos = logBound.toNanos();
    if (checkNanos <= 0 || logBoundNanos <= 0) {
      throw new IllegalArgumentException("the check period and the log bound must be positive");
    }
    // Both started now, while there is memory for a thread: an OutOfMemoryError may not leave any later.
    this.halter = daemon(this::haltWhenArmed, "fail-fast-halter");
    this.watchdog = daemon(this::watchEssentials, "fail-fast-watchdog");
  }

  /**
   * The real process's: halts ({@link ExitAction#halt()}), logs through SLF4J, checks every second, gives the log
   * 2 s, and becomes the JVM's default uncaught-exception handler. Call it first thing in {@code main}.
   */
  public static FailFast install() {
    FailFast failFast = new FailFast(ExitAction.halt(), FatalLog.slf4j(), Duration.ofSeconds(1), Duration.ofSeconds(2));
    Thread.setDefaultUncaughtExceptionHandler(failFast);
    return failFast;
  }

  /**
   * The instance {@link #install()} made the JVM's default handler, if this is the real process: a command run
   * in-process by a test finds none and registers nothing (its essential threads ending must not end the test's JVM).
   */
  public static Optional<FailFast> installed() {
    return Thread.getDefaultUncaughtExceptionHandler() instanceof FailFast f ? Optional.of(f) : Optional.empty();
  }

  /** {@code thread} must stay alive until {@link #stopping()}; {@code role} names it in the last line logged. */
  public void essential(String role, Thread thread) {
    Objects.requireNonNull(thread);
    essential(role, thread::isAlive);
  }

  /** The same for a thread the caller cannot see itself: {@code alive} answers whether it still runs. */
  public void essential(String role, BooleanSupplier alive) {
    essentials.add(new Essential(Objects.requireNonNull(role), Objects.requireNonNull(alive)));
    LockSupport.unpark(watchdog);
  }

  /** The process is stopping (SIGTERM, the command returned): essential threads end on purpose now. Errors still end it. */
  public void stopping() {
    stopping = true;
  }

  @Override
  public void uncaughtException(Thread thread, Throwable e) {
    if (e instanceof Error) {
      end(EXIT_FATAL_ERROR, thread, e, null);
      return;
    }
    try {
      log.threadDied("thread " + thread.getName() + " died of " + e, e);
    } catch (Throwable ignored) {
      // the thread is gone either way; an essential one is seen by the watchdog
    }
  }

  /** Arms the halter, logs one line (best effort), exits. Only the first caller reports; the others return. */
  private void end(int status, Thread thread, Throwable cause, String role) {
    if (!ending.compareAndSet(false, true)) {
      return;
    }
    // No allocation before the halter is armed: this may run in a thread that has just run out of memory.
    haltAtNanos = System.nanoTime() + logBoundNanos;
    haltStatus = status;
    LockSupport.unpark(halter);
    try {
      String why = cause != null ? cause + " in thread " + thread.getName() : role + " ended";
      log.fatal("fatal: " + why + "; exiting with status " + status + " so that the process is restarted", cause);
    } catch (Throwable ignored) {
      // out of memory even for the line: the status says it all
    }
    exitOnce(status);
  }

  private void exitOnce(int status) {
    if (exited.compareAndSet(false, true)) {
      exit.exit(status);
    }
  }

  private void haltWhenArmed() {
    while (!closed && !exited.get()) {
      if (haltStatus < 0) {
        LockSupport.park(this);
        continue;
      }
      long wait = haltAtNanos - System.nanoTime();
      if (wait > 0) {
        LockSupport.parkNanos(this, wait);
        continue;
      }
      exitOnce(haltStatus);
    }
  }

  private void watchEssentials() {
    while (!closed && !ending.get()) {
      if (!stopping) {
        for (Essential e : essentials) {
          // stopping is read again after the liveness: a thread ended on purpose was ended after stopping() was
          // called, so its end is seen with it; the first read alone could be older than both.
          if (!alive(e) && !stopping) {
            end(EXIT_ESSENTIAL_THREAD_ENDED, Thread.currentThread(), null, e.role());
            return;
          }
        }
      }
      LockSupport.parkNanos(this, checkNanos);
    }
  }

  private static boolean alive(Essential e) {
    try {
      return e.alive().getAsBoolean();
    } catch (RuntimeException cannotTell) {
      return true;
    }
  }

  private static Thread daemon(Runnable body, String name) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    t.start();
    return t;
  }

  /** Stops both threads (tests); no longer the default handler if it was. */
  @Override
  public void close() {
    closed = true;
    LockSupport.unpark(watchdog);
    LockSupport.unpark(halter);
    if (Thread.getDefaultUncaughtExceptionHandler() == this) {
      Thread.setDefaultUncaughtExceptionHandler(null);
    }
  }
}

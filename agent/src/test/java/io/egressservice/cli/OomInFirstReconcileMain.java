package io.egressservice.cli;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.turbo.TurboFilter;
import ch.qos.logback.core.spi.FilterReply;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.LoggerFactory;
import org.slf4j.Marker;

/**
 * {@link Main}, started by a test instead of it, with one fault: the reconcile worker ({@code reconcile-<node>})
 * runs out of heap in its first reconcile. An {@link OutOfMemoryError} is thrown at the worker's first log call
 * after its "informers synced" line (a reconcile logs at least its outcome, at debug when in sync), once: the
 * lines that follow, the fatal one among them, are logged as usual.
 *
 * <p>Injected through logback, which asks its turbo filters about every log call of any level before anything
 * else, so the shipped jar carries no fault of a test's; this class lives in the tests' class path, which the
 * agent processes of the tests run with.
 */
public final class OomInFirstReconcileMain {
  private OomInFirstReconcileMain() {}

  public static void main(String[] args) {
    // Configured here, by the agent's own LogConfigurator, as Main would have it configured at its first line.
    ((LoggerContext) LoggerFactory.getILoggerFactory()).addTurboFilter(new OomAfterSync());
    Main.main(args);
  }

  private static final class OomAfterSync extends TurboFilter {
    private final AtomicBoolean synced = new AtomicBoolean();
    private final AtomicBoolean thrown = new AtomicBoolean();

    @Override
    public FilterReply decide(Marker marker, Logger logger, Level level, String format, Object[] params, Throwable t) {
      if (!Thread.currentThread().getName().startsWith("reconcile-")) {
        return FilterReply.NEUTRAL;
      }
      if (format != null && format.startsWith("informers synced")) {
        synced.set(true);
      } else if (synced.get() && thrown.compareAndSet(false, true)) {
        throw new OutOfMemoryError("Java heap space (injected by a test: " + OomInFirstReconcileMain.class.getName()
            + ")");
      }
      return FilterReply.NEUTRAL;
    }
  }
}

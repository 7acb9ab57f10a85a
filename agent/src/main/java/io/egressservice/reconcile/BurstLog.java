package io.egressservice.reconcile;

import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;

/** Tells the log when a burst starts being batched and what it cost when it is over. */
final class BurstLog {
  /** The loop owner's: these lines read as part of its reconcile log. */
  private final Logger log;
  private final long minNanos;
  private final long maxNanos;
  private long startNanos;
  private long events;
  private int reconciles;

  BurstLog(Logger log, Pacing pacing) {
    this.log = log;
    this.minNanos = pacing.minNanos();
    this.maxNanos = pacing.maxNanos();
  }

  /**
   * A reconcile starts at {@code now}: {@code coalesced} API events came in the {@code elapsedNanos} since the last
   * one, and the pacing interval goes from {@code current} to {@code next}.
   */
  void observe(long now, int coalesced, long elapsedNanos, long current, long next) {
    if (current == minNanos && next > minNanos) {
      startNanos = now;
      events = 0;
      reconciles = 0;
      log.info("API events arrive in a burst ({} in the last {} ms): reconciling at most every {} ms while it lasts"
          + " (up to {} ms)", coalesced, TimeUnit.NANOSECONDS.toMillis(elapsedNanos),
          TimeUnit.NANOSECONDS.toMillis(next), TimeUnit.NANOSECONDS.toMillis(maxNanos));
    }
    if (current > minNanos || next > minNanos) {
      events += coalesced;
      reconciles++;
    }
    if (current > minNanos && next == minNanos) {
      log.info("burst over: {} API events in {} reconciles over {} ms", events, reconciles,
          TimeUnit.NANOSECONDS.toMillis(now - startNanos));
    }
  }
}

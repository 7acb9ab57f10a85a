package io.egressservice.controller;

import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Tells the log when a burst starts being batched and what it cost when it is over. */
final class BurstLog {
  /** Under the agent's name: these lines read as part of its reconcile log. */
  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);
  private long startNanos;
  private long events;
  private int reconciles;

  /**
   * A reconcile starts at {@code now}: {@code coalesced} API events came in the {@code elapsedNanos} since the last
   * one, and the pacing interval goes from {@code current} to {@code next}.
   */
  void observe(long now, int coalesced, long elapsedNanos, long current, long next) {
    if (current == Pacing.MIN_INTERVAL_NANOS && next > Pacing.MIN_INTERVAL_NANOS) {
      startNanos = now;
      events = 0;
      reconciles = 0;
      LOG.info("API events arrive in a burst ({} in the last {} ms): reconciling at most every {} ms while it lasts"
          + " (up to {} ms)", coalesced, TimeUnit.NANOSECONDS.toMillis(elapsedNanos),
          TimeUnit.NANOSECONDS.toMillis(next), TimeUnit.NANOSECONDS.toMillis(Pacing.MAX_INTERVAL_NANOS));
    }
    if (current > Pacing.MIN_INTERVAL_NANOS || next > Pacing.MIN_INTERVAL_NANOS) {
      events += coalesced;
      reconciles++;
    }
    if (current > Pacing.MIN_INTERVAL_NANOS && next == Pacing.MIN_INTERVAL_NANOS) {
      LOG.info("burst over: {} API events in {} reconciles over {} ms", events, reconciles,
          TimeUnit.NANOSECONDS.toMillis(now - startNanos));
    }
  }
}

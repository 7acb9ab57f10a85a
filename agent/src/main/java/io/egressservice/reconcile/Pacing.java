package io.egressservice.reconcile;

import java.util.concurrent.TimeUnit;

/**
 * How far apart reconciles start: at the minimum while relevant API events come at a calm rate, so
 * each change reaches the kernel within about one minimum interval; doubling up to the maximum while
 * a burst lasts, so a rollout storm costs one reconcile a second instead of one per minimum interval.
 * With the minimum equal to the maximum the spacing is fixed (the allocator's). Not thread-safe: the
 * reconcile loop owns it.
 */
final class Pacing {
  /**
   * Reconciles start at least this far apart: an event after a quiet spell is applied at once, and
   * the events that arrive meanwhile are coalesced into the next reconcile. A reconcile of 100
   * services costs about 6 ms of the reconcile thread's CPU (bench/README.md), so churn at this spacing
   * costs about a third of a CPU; it was 50 ms when a reconcile cost twice as much.
   */
  static final long MIN_INTERVAL_NANOS = TimeUnit.MILLISECONDS.toNanos(25);
  /**
   * The longest the interval grows to while a burst of events lasts: kube-proxy's default
   * minimum sync period, so a storm reaches the kernel no later than it reaches the Service VIPs.
   */
  static final long MAX_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);
  /**
   * The rate is judged over stretches of at least this long (one or more intervals between reconcile
   * starts): shorter ones hold too few events to tell a burst from a clump, which made bursts cost
   * three times as many reconciles when judged per 25 ms stretch.
   */
  static final long JUDGED_OVER_NANOS = TimeUnit.MILLISECONDS.toNanos(50);
  /**
   * Relevant API events arriving at this rate or faster, and at least {@link #BURST_MIN_EVENTS} of them
   * in a judged stretch, are a burst. Two such stretches in a row double the next interval, two calm
   * ones in a row halve it: one clump of events (the API server delivers them unevenly) or one lull
   * inside a storm changes nothing. A rate, not a count: a count per interval grows with the
   * interval, so steady churn would keep a grown interval grown. At 50 a second, steady churn of 33
   * updates a second escalated.
   */
  static final double BURST_EVENTS_PER_SECOND = 80;
  static final int BURST_MIN_EVENTS = 4;

  private final long minNanos;
  private final long maxNanos;
  private long intervalNanos;
  private boolean lastStretchWasBurst;
  private int stretchEvents;
  private long stretchNanos;

  /** The node agent's pacing: from {@link #MIN_INTERVAL_NANOS} up to {@link #MAX_INTERVAL_NANOS} in a burst. */
  Pacing() {
    this(MIN_INTERVAL_NANOS, MAX_INTERVAL_NANOS);
  }

  Pacing(long minNanos, long maxNanos) {
    if (minNanos <= 0 || maxNanos < minNanos) {
      throw new IllegalArgumentException("pacing needs 0 < min <= max, not " + minNanos + " and " + maxNanos);
    }
    this.minNanos = minNanos;
    this.maxNanos = maxNanos;
    this.intervalNanos = minNanos;
  }

  long minNanos() {
    return minNanos;
  }

  long maxNanos() {
    return maxNanos;
  }

  /** The least time between the last reconcile start and the next. */
  long intervalNanos() {
    return intervalNanos;
  }

  /**
   * A reconcile starts {@code elapsedNanos} after the previous one, with {@code events} relevant API
   * events in between; returns the interval before the next start.
   */
  long reconcileStarts(int events, long elapsedNanos) {
    stretchEvents += events;
    stretchNanos += elapsedNanos;
    if (stretchNanos < JUDGED_OVER_NANOS) {
      return intervalNanos;
    }
    boolean burst = isBurst(stretchEvents, stretchNanos);
    intervalNanos = nextIntervalNanos(intervalNanos, lastStretchWasBurst, burst, minNanos, maxNanos);
    lastStretchWasBurst = burst;
    stretchEvents = 0;
    stretchNanos = 0;
    return intervalNanos;
  }

  /** Whether {@code events} relevant API events within {@code elapsedNanos} are a burst. */
  static boolean isBurst(int events, long elapsedNanos) {
    return events >= BURST_MIN_EVENTS && events * 1e9 >= BURST_EVENTS_PER_SECOND * elapsedNanos;
  }

  /** The node agent's interval after a judged stretch that was, or was not, a burst. */
  static long nextIntervalNanos(long current, boolean previousWasBurst, boolean burst) {
    return nextIntervalNanos(current, previousWasBurst, burst, MIN_INTERVAL_NANOS, MAX_INTERVAL_NANOS);
  }

  private static long nextIntervalNanos(long current, boolean previousWasBurst, boolean burst, long min, long max) {
    if (burst != previousWasBurst) {
      return current;
    }
    return burst ? Math.min(max, current * 2) : Math.max(min, current / 2);
  }
}

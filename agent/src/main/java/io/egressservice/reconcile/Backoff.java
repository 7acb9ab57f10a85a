package io.egressservice.reconcile;

import java.time.Duration;

/**
 * How long a failed reconcile's retry waits: {@code first} after one failure, doubling with each further one, at most
 * {@code cap}. The retry also waits for the loop's pacing, so a first wait shorter than the pacing interval is the
 * interval.
 */
public record Backoff(Duration first, Duration cap) {
  /** The agent's and the allocator's: 100 ms, then 200 ms, 400 ms, and so on up to the cap. */
  public static Backoff from100Millis(Duration cap) {
    return new Backoff(Duration.ofMillis(100), cap);
  }

  public Backoff {
    if (first.isNegative() || first.isZero() || cap.isNegative()) {
      throw new IllegalArgumentException("a backoff needs a positive first wait and a cap, not " + first + " and "
          + cap);
    }
  }

  /** The wait after {@code failures} failures in a row (at least one). */
  public long delayMillis(int failures) {
    return Math.min(cap.toMillis(), first.toMillis() << Math.min(Math.max(failures, 1) - 1, 20));
  }
}

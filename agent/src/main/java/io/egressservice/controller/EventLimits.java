package io.egressservice.controller;

import java.time.Duration;

/**
 * How many Events the agent writes: per EgressService a burst of {@code perServiceBurst}, then one per
 * {@code perServiceRefill}; over all of them a burst of {@code burst}, then one per {@code refill}; at
 * most {@code maxPending} waiting (one per service and kind of Event: a newer one replaces what waits).
 */
public record EventLimits(int perServiceBurst, Duration perServiceRefill, int burst, Duration refill, int maxPending) {
  public EventLimits {
    if (perServiceBurst < 1 || burst < 1 || maxPending < 1 || perServiceRefill.isNegative() || perServiceRefill.isZero()
        || refill.isNegative() || refill.isZero()) {
      throw new IllegalArgumentException("event limits must be positive: " + perServiceBurst + ", " + perServiceRefill
          + ", " + burst + ", " + refill + ", " + maxPending);
    }
  }

  /**
   * 10 per service, then one per 30 s (a flapping service costs the API server a write every 30 s, and its
   * latest outcome is written within 30 s of the flapping's end); 100 at once, then 10/s overall (a cold
   * start of 1,000 services writes its Events in about 90 s, like client-go's default 5 QPS would in 200 s).
   */
  public static EventLimits defaults() {
    return new EventLimits(10, Duration.ofSeconds(30), 100, Duration.ofMillis(100), 16384);
  }
}

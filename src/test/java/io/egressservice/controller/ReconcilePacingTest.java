package io.egressservice.controller;

import static io.egressservice.controller.NodeAgent.MAX_INTERVAL_NANOS;
import static io.egressservice.controller.NodeAgent.MIN_INTERVAL_NANOS;
import static io.egressservice.controller.NodeAgent.isBurst;
import static io.egressservice.controller.NodeAgent.nextIntervalNanos;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How the gap between reconcile starts follows the rate of relevant API events. */
class ReconcilePacingTest {
  static final long MS = 1_000_000L;

  /** Feeds a steady stream of {@code perSecond} events; returns the intervals chosen, in ms. */
  static List<Long> steadyStream(double perSecond, long startIntervalNanos, int reconciles) {
    List<Long> millis = new ArrayList<>();
    long interval = startIntervalNanos;
    boolean previous = false;
    for (int i = 0; i < reconciles; i++) {
      int events = (int) Math.round(perSecond * interval / 1e9);
      boolean burst = isBurst(events, interval);
      interval = nextIntervalNanos(interval, previous, burst);
      previous = burst;
      millis.add(interval / MS);
    }
    return millis;
  }

  @Test
  void aBurstDoublesTheIntervalUpToTheCapAfterTwoBusyStretches() {
    assertThat(steadyStream(400, MIN_INTERVAL_NANOS, 8)).containsExactly(50L, 100L, 200L, 400L, 800L, 1000L, 1000L, 1000L);
  }

  @Test
  void steadyChurnBelowTheBurstRateStaysAtTheMinimum() {
    assertThat(steadyStream(33, MIN_INTERVAL_NANOS, 10)).containsOnly(50L);
    assertThat(steadyStream(60, MIN_INTERVAL_NANOS, 10)).containsOnly(50L); // 3 events per 50 ms
    assertThat(steadyStream(60, 4 * MIN_INTERVAL_NANOS, 4)).containsExactly(100L, 50L, 50L, 50L);
  }

  @Test
  void steadyChurnBelowTheBurstRateBringsAGrownIntervalBackToTheMinimum() {
    // the rate, not the count per interval, decides: 33 events in one second are not a burst
    assertThat(steadyStream(33, MAX_INTERVAL_NANOS, 6)).containsExactly(500L, 250L, 125L, 62L, 50L, 50L);
  }

  @Test
  void oneLullInsideABurstKeepsTheInterval() {
    assertThat(nextIntervalNanos(MAX_INTERVAL_NANOS, true, false)).isEqualTo(MAX_INTERVAL_NANOS);
    assertThat(nextIntervalNanos(MAX_INTERVAL_NANOS, false, false)).isEqualTo(MAX_INTERVAL_NANOS / 2);
  }

  @Test
  void oneClumpOfEventsAloneIsNotABurst() {
    assertThat(isBurst(10, 50 * MS)).isTrue();
    assertThat(nextIntervalNanos(MIN_INTERVAL_NANOS, false, true)).isEqualTo(MIN_INTERVAL_NANOS);
    assertThat(nextIntervalNanos(4 * MIN_INTERVAL_NANOS, false, true)).isEqualTo(4 * MIN_INTERVAL_NANOS);
  }

  @Test
  void aFewEventsAfterAQuietSpellAreNotABurst() {
    assertThat(isBurst(3, 10 * MS)).isFalse();
    assertThat(isBurst(4, 50 * MS)).isTrue();
    assertThat(isBurst(4, 60 * MS)).isFalse();
    assertThat(isBurst(40, 10_000 * MS)).isFalse();
  }
}

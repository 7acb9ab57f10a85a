package io.egressservice.controller;

import static io.egressservice.controller.NodeAgent.BURST_EVENTS;
import static io.egressservice.controller.NodeAgent.MAX_INTERVAL_NANOS;
import static io.egressservice.controller.NodeAgent.MIN_INTERVAL_NANOS;
import static io.egressservice.controller.NodeAgent.nextIntervalNanos;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How the gap between reconcile starts follows the rate of relevant API events. */
class ReconcilePacingTest {

  @Test
  void aBurstDoublesTheIntervalUpToTheCap() {
    List<Long> millis = new ArrayList<>();
    long interval = MIN_INTERVAL_NANOS;
    int previous = 1;
    for (int i = 0; i < 7; i++) {
      interval = nextIntervalNanos(interval, previous, 40);
      previous = 40;
      millis.add(interval / 1_000_000);
    }
    assertThat(millis).containsExactly(50L, 100L, 200L, 400L, 800L, 1000L, 1000L);
  }

  @Test
  void quietReconcilesHalveItBackToTheMinimum() {
    long interval = MAX_INTERVAL_NANOS;
    List<Long> millis = new ArrayList<>();
    for (int i = 0; i < 5; i++) {
      interval = nextIntervalNanos(interval, 40, 1);
      millis.add(interval / 1_000_000);
    }
    assertThat(millis).containsExactly(500L, 250L, 125L, 62L, 50L);
  }

  @Test
  void churnBelowTheBurstRateStaysAtTheMinimum() {
    assertThat(nextIntervalNanos(MIN_INTERVAL_NANOS, BURST_EVENTS - 1, BURST_EVENTS - 1)).isEqualTo(MIN_INTERVAL_NANOS);
    assertThat(nextIntervalNanos(MIN_INTERVAL_NANOS, 0, 0)).isEqualTo(MIN_INTERVAL_NANOS);
    assertThat(nextIntervalNanos(MIN_INTERVAL_NANOS, BURST_EVENTS, BURST_EVENTS)).isEqualTo(2 * MIN_INTERVAL_NANOS);
  }

  @Test
  void oneClumpOfEventsAloneIsNotABurst() {
    assertThat(nextIntervalNanos(MIN_INTERVAL_NANOS, 1, 10)).isEqualTo(MIN_INTERVAL_NANOS);
    assertThat(nextIntervalNanos(4 * MIN_INTERVAL_NANOS, 1, 10)).isEqualTo(4 * MIN_INTERVAL_NANOS);
  }
}

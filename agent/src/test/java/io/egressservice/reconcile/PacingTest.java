package io.egressservice.reconcile;

import static io.egressservice.reconcile.Pacing.MAX_INTERVAL_NANOS;
import static io.egressservice.reconcile.Pacing.MIN_INTERVAL_NANOS;
import static io.egressservice.reconcile.Pacing.isBurst;
import static io.egressservice.reconcile.Pacing.nextIntervalNanos;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** How the gap between reconcile starts follows the rate of relevant API events. */
class PacingTest {
  static final long MS = 1_000_000L;

  /**
   * Feeds {@code pacing} a steady stream of {@code perSecond} events, each reconcile starting as soon as
   * the interval allows; returns the intervals chosen, in ms.
   */
  static List<Long> steadyStream(Pacing pacing, double perSecond, int reconciles) {
    List<Long> millis = new ArrayList<>();
    double clock = 0;
    for (int i = 0; i < reconciles; i++) {
      long interval = pacing.intervalNanos();
      int events = (int) (Math.floor((clock + interval) * perSecond / 1e9) - Math.floor(clock * perSecond / 1e9));
      clock += interval;
      millis.add(pacing.reconcileStarts(events, interval) / MS);
    }
    return millis;
  }

  @Test
  void aBurstDoublesTheIntervalUpToTheCapAfterTwoBusyStretches() {
    // 25 ms stretches are judged in pairs (50 ms): the second busy pair starts the doubling
    assertThat(steadyStream(new Pacing(), 400, 10)).containsExactly(25L, 25L, 25L, 50L, 100L, 200L, 400L, 800L, 1000L,
        1000L);
  }

  @Test
  void steadyChurnBelowTheBurstRateStaysAtTheMinimum() {
    assertThat(MIN_INTERVAL_NANOS).isEqualTo(25 * MS);
    assertThat(steadyStream(new Pacing(), 33, 40)).containsOnly(25L);
    assertThat(steadyStream(new Pacing(), 60, 40)).containsOnly(25L); // 3 events per judged 50 ms
  }

  @Test
  void steadyChurnBelowTheBurstRateBringsAGrownIntervalBackToTheMinimum() {
    Pacing pacing = new Pacing();
    steadyStream(pacing, 400, 12);
    assertThat(pacing.intervalNanos()).isEqualTo(MAX_INTERVAL_NANOS);
    // the rate, not the count per interval, decides: 33 events in one second are not a burst
    assertThat(steadyStream(pacing, 33, 9)).containsExactly(1000L, 500L, 250L, 125L, 62L, 31L, 31L, 25L, 25L);
  }

  @Test
  void aStretchShorterThanTheJudgedSpanChangesNothingYet() {
    Pacing pacing = new Pacing();
    assertThat(pacing.reconcileStarts(10, 25 * MS)).isEqualTo(MIN_INTERVAL_NANOS);
    assertThat(pacing.reconcileStarts(10, 25 * MS)).isEqualTo(MIN_INTERVAL_NANOS); // first busy 50 ms
    assertThat(pacing.reconcileStarts(20, 50 * MS)).isEqualTo(2 * MIN_INTERVAL_NANOS); // second in a row
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
    Pacing pacing = new Pacing();
    pacing.reconcileStarts(0, 10_000 * MS); // a quiet spell
    assertThat(pacing.reconcileStarts(12, 50 * MS)).isEqualTo(MIN_INTERVAL_NANOS);
    assertThat(pacing.reconcileStarts(1, 50 * MS)).isEqualTo(MIN_INTERVAL_NANOS);
  }

  @Test
  void aFewEventsAfterAQuietSpellAreNotABurst() {
    assertThat(isBurst(3, 10 * MS)).isFalse();
    assertThat(isBurst(4, 50 * MS)).isTrue();
    assertThat(isBurst(4, 60 * MS)).isFalse();
    assertThat(isBurst(40, 10_000 * MS)).isFalse();
  }

  @Test
  void aPaceWithTheMinimumAtTheMaximumIsAFixedSpacingThatNoBurstChanges() {
    Pacing fixed = new Pacing(250 * MS, 250 * MS);
    assertThat(steadyStream(fixed, 400, 10)).containsOnly(250L);
    assertThat(steadyStream(fixed, 1, 5)).containsOnly(250L);
  }
}

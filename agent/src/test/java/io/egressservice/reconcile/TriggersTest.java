package io.egressservice.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** When the worker reconciles next, and what the reconcile is called (metrics and logs use the names). */
class TriggersTest {
  static final long NEVER = Long.MAX_VALUE;

  static Triggers started() throws InterruptedException {
    Triggers triggers = new Triggers(new Pacing(), LoggerFactory.getLogger(TriggersTest.class), () -> false,
        () -> "kernel", () -> { }, s -> { });
    triggers.start();
    triggers.started();
    assertThat(triggers.awaitDue(NEVER, 0, false, NEVER)).contains(new Due(ReconcileLoop.STARTUP, false));
    return triggers;
  }

  @Test
  void pendingWorkCountsTheTriggersWaitingAndHowLongTheOldestWaitedUntilAReconcileTakesThem() throws Exception {
    Triggers triggers = started();
    assertThat(triggers.pending()).isEqualTo(new ReconcileLoop.Pending(0, 0));

    triggers.changed("api");
    long firstAt = System.nanoTime();
    triggers.trigger("kernel");
    triggers.changed("api");
    await().atMost(Duration.ofSeconds(2)).until(() -> System.nanoTime() - firstAt > 50_000_000L);

    ReconcileLoop.Pending waiting = triggers.pending();
    assertThat(waiting.triggers()).isEqualTo(3);
    assertThat(waiting.oldestSeconds()).isGreaterThanOrEqualTo(0.05).isLessThan(5);

    assertThat(triggers.awaitDue(NEVER, 0, false, NEVER)).isPresent();
    assertThat(triggers.pending()).isEqualTo(new ReconcileLoop.Pending(0, 0));
  }

  @Test
  void aReconcileAfterAFailureWithNoNewCauseIsARetry() throws Exception {
    Triggers triggers = started();
    triggers.changed("api");
    assertThat(triggers.awaitDue(NEVER, 0, false, NEVER)).contains(new Due("api", true));
    // that one failed: its retry is due, with the cause it came with taken
    triggers.retry();
    assertThat(triggers.awaitDue(NEVER, 0, true, NEVER)).contains(new Due(ReconcileLoop.RETRY, false));
  }

  @Test
  void driftWhileRetryingKeepsItsNameAndAChangeWhileRetryingIsAChange() throws Exception {
    Triggers triggers = started();
    triggers.trigger("kernel");
    assertThat(triggers.awaitDue(NEVER, 0, true, NEVER)).contains(new Due("kernel", false));
    triggers.changed("api");
    assertThat(triggers.awaitDue(NEVER, 0, true, NEVER)).contains(new Due("api", true));
  }

  @Test
  void theResyncIsDueAtItsTimeAndNamedSoUnlessItRetriesAFailure() throws Exception {
    Triggers triggers = started();
    assertThat(triggers.awaitDue(System.nanoTime(), 0, false, NEVER)).contains(new Due(ReconcileLoop.RESYNC, false));
    assertThat(triggers.awaitDue(System.nanoTime(), 0, true, NEVER)).contains(new Due(ReconcileLoop.RETRY, false));
  }

  @Test
  void theWaitEndsEmptyAtTheWorkersOtherDeadlineWhenNothingIsDue() throws Exception {
    Triggers triggers = started();
    assertThat(triggers.awaitDue(NEVER, 0, false, System.nanoTime() + 20_000_000L)).isEmpty();
    assertThat(triggers.running()).isTrue();
  }

  @Test
  void theIdleCheckMakesAReconcileNamedForItDue() throws Exception {
    boolean[] edited = {false};
    Triggers triggers = new Triggers(new Pacing(), LoggerFactory.getLogger(TriggersTest.class), () -> edited[0],
        () -> "kernel", () -> { }, s -> { });
    triggers.start();
    edited[0] = true;
    assertThat(triggers.awaitDue(NEVER, 0, false, NEVER)).contains(new Due("kernel", false));
  }
}

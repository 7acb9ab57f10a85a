package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The work waiting for the reconcile worker, as the metrics read it. */
class ReconcileTriggersTest {

  @Test
  void pendingWorkCountsTheTriggersWaitingAndHowLongTheOldestWaitedUntilAReconcileTakesThem() throws Exception {
    ReconcileTriggers triggers = new ReconcileTriggers(() -> false, () -> { }, s -> { });
    triggers.start();
    // the startup reconcile takes what is due at the start
    triggers.synced();
    triggers.awaitDue(Long.MAX_VALUE, 0, false);
    assertThat(triggers.pending()).isEqualTo(new ReconcileTriggers.Pending(0, 0));

    triggers.trigger(NodeAgent.TRIGGER_API);
    long firstAt = System.nanoTime();
    triggers.trigger(NodeAgent.TRIGGER_KERNEL);
    triggers.trigger(NodeAgent.TRIGGER_API);
    await().atMost(Duration.ofSeconds(2)).until(() -> System.nanoTime() - firstAt > 50_000_000L);

    ReconcileTriggers.Pending waiting = triggers.pending();
    assertThat(waiting.triggers()).isEqualTo(3);
    assertThat(waiting.oldestSeconds()).isGreaterThanOrEqualTo(0.05).isLessThan(5);

    assertThat(triggers.awaitDue(Long.MAX_VALUE, 0, false)).isPresent();
    assertThat(triggers.pending()).isEqualTo(new ReconcileTriggers.Pending(0, 0));
  }
}

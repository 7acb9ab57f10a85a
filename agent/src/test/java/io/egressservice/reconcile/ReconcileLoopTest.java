package io.egressservice.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Predicate;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** The shared reconcile loop, on a fake reconcile: what runs when, how failures retry, and how it stops. */
class ReconcileLoopTest {
  static final Duration NO_RESYNC = Duration.ZERO;
  static final Duration AT_MOST = Duration.ofSeconds(5);

  /** A reconcile that records each call, and fails or blocks as a test tells it. */
  static final class FakeWork implements ReconcileLoop.Work {
    record Call(Due due, long startNanos) {}

    final List<Call> calls = new CopyOnWriteArrayList<>();
    final AtomicInteger failuresLeft = new AtomicInteger();
    final AtomicBoolean running = new AtomicBoolean();
    volatile CountDownLatch gate = new CountDownLatch(0);

    @Override
    public boolean reconcile(Due due) {
      running.set(true);
      try {
        calls.add(new Call(due, System.nanoTime()));
        gate.await(10, TimeUnit.SECONDS);
        return failuresLeft.getAndUpdate(n -> Math.max(0, n - 1)) == 0;
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return false;
      } finally {
        running.set(false);
      }
    }

    List<String> causes() {
      return calls.stream().map(c -> c.due().cause()).toList();
    }

    long gapMillis(int i) {
      return TimeUnit.NANOSECONDS.toMillis(calls.get(i).startNanos() - calls.get(i - 1).startNanos());
    }
  }

  final FakeWork work = new FakeWork();
  ReconcileLoop loop;

  ReconcileLoop loop(Duration resync, ReconcileLoop.Pace pace, Backoff backoff) {
    loop = new ReconcileLoop(new ReconcileLoop.Settings("reconcile-test", resync, pace, backoff,
        LoggerFactory.getLogger(ReconcileLoopTest.class)), work);
    return loop;
  }

  ReconcileLoop loop() {
    return loop(NO_RESYNC, ReconcileLoop.Pace.ADAPTIVE, Backoff.from100Millis(Duration.ofSeconds(30)));
  }

  @AfterEach
  void close() {
    work.gate.countDown();
    if (loop != null) {
      assertThat(loop.close(AT_MOST)).isTrue();
    }
  }

  void awaitCalls(int n) {
    await().atMost(AT_MOST).until(() -> work.calls.size() >= n);
  }

  @Test
  void nothingReconcilesBeforeTheStartConditionHoldsThenTheStartupReconcileTakesEverythingThatCame() {
    AtomicBoolean synced = new AtomicBoolean();
    AtomicInteger readyCalls = new AtomicInteger();
    loop().startWhen(synced::get, readyCalls::incrementAndGet, "a test").start();
    loop.changed("api");
    loop.trigger("kernel");
    await().during(Duration.ofMillis(200)).atMost(AT_MOST).until(() -> work.calls.isEmpty());
    assertThat(loop.liveness().alive()).as("waiting to start is alive").isTrue();

    synced.set(true);
    awaitCalls(1);
    await().during(Duration.ofMillis(200)).atMost(AT_MOST).until(() -> work.calls.size() == 1);
    assertThat(work.causes()).containsExactly(ReconcileLoop.STARTUP);
    assertThat(readyCalls).hasValue(1);
  }

  @Test
  void triggersThatArriveDuringAReconcileMakeOneReconcileAfterIt() {
    work.gate = new CountDownLatch(1);
    loop().start();
    awaitCalls(1);
    for (int i = 0; i < 20; i++) {
      loop.changed("api");
      loop.trigger("kernel");
    }
    assertThat(loop.pending().triggers()).isEqualTo(40);
    work.gate.countDown();
    awaitCalls(2);
    await().during(Duration.ofMillis(200)).atMost(AT_MOST).until(() -> work.calls.size() == 2);
    assertThat(work.calls.get(1).due()).isEqualTo(new Due("kernel", true));
    assertThat(loop.pending()).isEqualTo(new ReconcileLoop.Pending(0, 0));
  }

  @Test
  void aFailedReconcileIsRetriedAfterABackoffThatDoublesFrom100Millis() {
    work.failuresLeft.set(3);
    List<String> retries = new CopyOnWriteArrayList<>();
    loop().onRetry((failures, delay) -> retries.add(failures + ":" + delay)).start();
    awaitCalls(4);
    assertThat(work.causes()).containsExactly(ReconcileLoop.STARTUP, ReconcileLoop.RETRY, ReconcileLoop.RETRY,
        ReconcileLoop.RETRY);
    assertThat(retries).containsExactly("1:100", "2:200", "3:400");
    assertThat(work.gapMillis(1)).isGreaterThanOrEqualTo(100);
    assertThat(work.gapMillis(2)).isGreaterThanOrEqualTo(200);
    assertThat(work.gapMillis(3)).isGreaterThanOrEqualTo(400);
    // succeeded: nothing more until something is due
    await().during(Duration.ofMillis(300)).atMost(AT_MOST).until(() -> work.calls.size() == 4);
  }

  @Test
  void aThrowingReconcileIsAFailureAndTheLoopGoesOn() {
    AtomicInteger calls = new AtomicInteger();
    loop = new ReconcileLoop(new ReconcileLoop.Settings("reconcile-test", NO_RESYNC, ReconcileLoop.Pace.ADAPTIVE,
        Backoff.from100Millis(Duration.ofSeconds(30)), LoggerFactory.getLogger(ReconcileLoopTest.class)), due -> {
          if (calls.incrementAndGet() == 1) {
            throw new IllegalStateException("a bug in one reconcile");
          }
          return work.reconcile(due);
        });
    loop.start();
    awaitCalls(1);
    assertThat(work.causes()).containsExactly(ReconcileLoop.RETRY);
    assertThat(loop.liveness().alive()).isTrue();
  }

  @Test
  void aChangeIsNotHeldByTheBackoffButDriftIs() {
    work.failuresLeft.set(1);
    loop(NO_RESYNC, ReconcileLoop.Pace.ADAPTIVE, new Backoff(Duration.ofMinutes(1), Duration.ofMinutes(1))).start();
    awaitCalls(1);
    loop.trigger("kernel");
    await().during(Duration.ofMillis(300)).atMost(AT_MOST).until(() -> work.calls.size() == 1);
    // the offending object deleted: the change is reconciled at the normal pace
    loop.changed("api");
    awaitCalls(2);
    assertThat(work.calls.get(1).due()).isEqualTo(new Due("api", true));
  }

  @Test
  void theResyncRunsTheReconcileAtItsPeriodWhenNothingElseDoes() {
    loop(Duration.ofMillis(150), ReconcileLoop.Pace.ADAPTIVE, Backoff.from100Millis(Duration.ofSeconds(30))).start();
    awaitCalls(3);
    assertThat(work.causes().subList(0, 3)).containsExactly(ReconcileLoop.STARTUP, ReconcileLoop.RESYNC,
        ReconcileLoop.RESYNC);
    assertThat(work.gapMillis(1)).isGreaterThanOrEqualTo(150);
    assertThat(work.gapMillis(2)).isGreaterThanOrEqualTo(150);
  }

  @Test
  void theResyncComesWhileChangesKeepComing() {
    loop(Duration.ofMillis(300), ReconcileLoop.Pace.ADAPTIVE, Backoff.from100Millis(Duration.ofSeconds(30))).start();
    awaitCalls(1);
    await().atMost(AT_MOST).pollInterval(Duration.ofMillis(5)).until(() -> {
      loop.changed("api");
      return work.causes().contains(ReconcileLoop.RESYNC);
    });
  }

  @Test
  void aFixedPaceSpacesReconcileStartsHoweverManyChangesCome() {
    loop(NO_RESYNC, ReconcileLoop.Pace.fixed(Duration.ofMillis(200)), Backoff.from100Millis(Duration.ofSeconds(30)))
        .start();
    awaitCalls(1);
    await().atMost(AT_MOST).pollInterval(Duration.ofMillis(5)).until(() -> {
      loop.changed("change");
      return work.calls.size() >= 4;
    });
    for (int i = 1; i < 4; i++) {
      assertThat(work.gapMillis(i)).isGreaterThanOrEqualTo(200);
    }
  }

  @Test
  void nowIsHeldByNeitherThePacingNorTheBackoff() {
    work.failuresLeft.set(1);
    loop(NO_RESYNC, ReconcileLoop.Pace.fixed(Duration.ofMinutes(1)), new Backoff(Duration.ofMinutes(1),
        Duration.ofMinutes(1))).start();
    awaitCalls(1);
    loop.changed("change");
    await().during(Duration.ofMillis(200)).atMost(AT_MOST).until(() -> work.calls.size() == 1);
    loop.now("leading");
    awaitCalls(2);
    assertThat(work.calls.get(1).due()).isEqualTo(new Due("leading", true));
  }

  @Test
  void theIdleCheckRunsAReconcileNamedForIt() {
    AtomicBoolean edited = new AtomicBoolean();
    loop().whenIdle("kernel", () -> edited.getAndSet(false)).start();
    awaitCalls(1);
    edited.set(true);
    awaitCalls(2);
    assertThat(work.causes()).containsExactly(ReconcileLoop.STARTUP, "kernel");
  }

  @Test
  void aPeriodicTaskRunsOnTheWorkerAndNeverBesideAReconcile() {
    List<String> threads = new CopyOnWriteArrayList<>();
    AtomicBoolean beside = new AtomicBoolean();
    loop().every(Duration.ofMillis(20), () -> {
      threads.add(Thread.currentThread().getName());
      beside.compareAndSet(false, work.running.get());
    }).start();
    await().atMost(AT_MOST).until(() -> {
      loop.changed("api");
      return threads.size() >= 5 && work.calls.size() >= 5;
    });
    assertThat(threads).allMatch(Predicate.isEqual("reconcile-test"));
    assertThat(beside).isFalse();
  }

  @Test
  void awaitIdleAndCloseWaitForTheReconcileInProgress() {
    work.gate = new CountDownLatch(1);
    loop().start();
    awaitCalls(1);
    assertThat(loop.awaitIdle(Duration.ofMillis(50))).isFalse();
    assertThat(loop.close(Duration.ofMillis(50))).isFalse();
    assertThat(loop.liveness().alive()).as("still in its reconcile").isTrue();
    work.gate.countDown();
    assertThat(loop.awaitIdle(AT_MOST)).isTrue();
    assertThat(loop.close(AT_MOST)).isTrue();
    assertThat(loop.liveness().alive()).isFalse();
    assertThat(work.calls).hasSize(1);
  }

  @Test
  void aLoopNotStartedIsNotAlive() {
    assertThat(loop().liveness().alive()).isFalse();
  }
}

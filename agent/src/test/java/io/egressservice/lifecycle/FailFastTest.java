package io.egressservice.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** FailFast with an exit action that records the status instead of ending the test's JVM. */
class FailFastTest {
  final List<Integer> exits = new CopyOnWriteArrayList<>();
  final List<String> fatalLines = new CopyOnWriteArrayList<>();
  final List<String> deaths = new CopyOnWriteArrayList<>();
  final List<Thread> started = new CopyOnWriteArrayList<>();
  final CountDownLatch release = new CountDownLatch(1);
  FailFast failFast;

  final FatalLog recording = new FatalLog() {
    @Override
    public void fatal(String line, Throwable cause) {
      fatalLines.add(line);
    }

    @Override
    public void threadDied(String line, Throwable cause) {
      deaths.add(line);
    }
  };

  @AfterEach
  void tearDown() throws InterruptedException {
    release.countDown();
    if (failFast != null) {
      failFast.close();
    }
    for (Thread t : started) {
      t.join(5000);
    }
  }

  FailFast failFast(FatalLog log) {
    failFast = new FailFast(exits::add, log, Duration.ofMillis(50), Duration.ofMillis(300));
    return failFast;
  }

  /** A thread with {@code failFast} as its uncaught-exception handler (the process sets it as the default). */
  Thread thread(String name, Runnable body) {
    Thread t = new Thread(body, name);
    t.setDaemon(true);
    t.setUncaughtExceptionHandler(failFast);
    started.add(t);
    t.start();
    return t;
  }

  void awaitRelease() {
    try {
      release.await(30, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  @Test
  void anOutOfMemoryErrorInAnyThreadExitsThreeOnceWithOneLine() {
    failFast(recording);
    thread("some-library-thread", () -> {
      throw new OutOfMemoryError("Java heap space");
    });
    thread("another-one", () -> {
      throw new OutOfMemoryError("Metaspace");
    });

    await().atMost(Duration.ofSeconds(5)).until(() -> !exits.isEmpty());
    await().during(Duration.ofMillis(500)).atMost(Duration.ofSeconds(2)).until(() -> exits.size() == 1);
    assertThat(exits).containsExactly(FailFast.EXIT_FATAL_ERROR);
    assertThat(fatalLines).singleElement().asString()
        .startsWith("fatal: java.lang.OutOfMemoryError: ").contains("in thread ", "exiting with status 3");
  }

  @Test
  void anExceptionInAThreadThatIsNotEssentialIsLoggedAndTheProcessGoesOn() {
    failFast(recording);
    thread("some-library-thread", () -> {
      throw new IllegalStateException("boom");
    });

    await().atMost(Duration.ofSeconds(5)).until(() -> !deaths.isEmpty());
    assertThat(deaths).containsExactly("thread some-library-thread died of java.lang.IllegalStateException: boom");
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(exits::isEmpty);
  }

  @Test
  void anEssentialThreadThatDiesOfAnExceptionExitsFour() {
    failFast(recording);
    CountDownLatch go = new CountDownLatch(1);
    Thread worker = thread("reconcile-node-a", () -> {
      try {
        go.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
      throw new IllegalStateException("the loop's own bug");
    });
    failFast.essential("the reconcile loop", worker);
    await().during(Duration.ofMillis(200)).atMost(Duration.ofSeconds(2)).until(exits::isEmpty);

    go.countDown();

    await().atMost(Duration.ofSeconds(5)).until(() -> !exits.isEmpty());
    assertThat(exits).containsExactly(FailFast.EXIT_ESSENTIAL_THREAD_ENDED);
    assertThat(fatalLines).containsExactly("fatal: the reconcile loop ended; exiting with status 4 so that the process"
        + " is restarted");
  }

  @Test
  void anEssentialThreadEndedByTheStopWhileTheWatchdogChecksItIsNotAFailure() {
    failFast(recording);
    // The stop lands between the watchdog's look at the stopping flag and its look at the thread: the thread is
    // found ended, and was ended on purpose.
    AtomicBoolean checked = new AtomicBoolean();
    failFast.essential("the probes' server", () -> {
      failFast.stopping();
      checked.set(true);
      return false;
    });
    await().atMost(Duration.ofSeconds(2)).untilTrue(checked);
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(exits::isEmpty);
    assertThat(fatalLines).isEmpty();
  }

  @Test
  void anEssentialThreadThatReturnsQuietlyExitsFourButNotOnceTheProcessIsStopping() {
    failFast(recording);
    AtomicBoolean serving = new AtomicBoolean(true);
    failFast.essential("the probes' server", serving::get);
    failFast.stopping();
    serving.set(false);
    await().during(Duration.ofMillis(300)).atMost(Duration.ofSeconds(2)).until(exits::isEmpty);

    FailFast other = new FailFast(exits::add, recording, Duration.ofMillis(50), Duration.ofMillis(300));
    try {
      other.essential("the probes' server", serving::get);
      await().atMost(Duration.ofSeconds(5)).until(() -> !exits.isEmpty());
      assertThat(exits).containsExactly(FailFast.EXIT_ESSENTIAL_THREAD_ENDED);
    } finally {
      other.close();
    }
  }

  @Test
  void aStuckThreadIsNotEnded() {
    failFast(recording);
    Thread stuck = thread("reconcile-node-a", this::awaitRelease);
    failFast.essential("the reconcile loop", stuck);

    await().during(Duration.ofMillis(400)).atMost(Duration.ofSeconds(2)).until(exits::isEmpty);
  }

  @Test
  void aLogThatBlocksDelaysTheExitByTheBoundOnly() {
    FatalLog blocked = new FatalLog() {
      @Override
      public void fatal(String line, Throwable cause) {
        awaitRelease(); // e.g. stderr is a full pipe nobody reads
      }

      @Override
      public void threadDied(String line, Throwable cause) {}
    };
    failFast(blocked);
    long start = System.nanoTime();
    thread("reconcile-node-a", () -> {
      throw new OutOfMemoryError("Java heap space");
    });

    await().atMost(Duration.ofSeconds(5)).until(() -> !exits.isEmpty());
    assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(300));
    assertThat(exits).containsExactly(FailFast.EXIT_FATAL_ERROR);
  }

  @Test
  void aLogThatFailsStillExits() {
    FatalLog failing = new FatalLog() {
      @Override
      public void fatal(String line, Throwable cause) {
        throw new OutOfMemoryError("not even for the line");
      }

      @Override
      public void threadDied(String line, Throwable cause) {}
    };
    failFast(failing);
    thread("reconcile-node-a", () -> {
      throw new OutOfMemoryError("Java heap space");
    });

    await().atMost(Duration.ofSeconds(5)).until(() -> !exits.isEmpty());
    assertThat(exits).containsExactly(FailFast.EXIT_FATAL_ERROR);
  }

  @Test
  void installedIsEmptyUnlessThisIsTheDefaultHandler() {
    failFast(recording);
    assertThat(FailFast.installed()).isEmpty();
  }
}

package io.egressservice.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ThreadsTest {
  @Test
  void findsALiveThreadByItsExactName() throws InterruptedException {
    CountDownLatch release = new CountDownLatch(1);
    Thread t = new Thread(() -> {
      try {
        release.await(30, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    }, "threads-test-worker");
    t.setDaemon(true);
    t.start();
    try {
      assertThat(Threads.named("threads-test-worker")).contains(t);
      assertThat(Threads.named("threads-test-")).isEmpty();
    } finally {
      release.countDown();
      t.join(5000);
    }
    assertThat(Threads.named("threads-test-worker")).isEmpty();
  }
}

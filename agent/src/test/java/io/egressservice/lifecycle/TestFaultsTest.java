package io.egressservice.lifecycle;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

class TestFaultsTest {
  final Clock fixed = Clock.fixed(Instant.ofEpochSecond(1000), ZoneOffset.UTC);

  @Test
  void withoutThePropertyTheClockIsTheSame() {
    assertThat(TestFaults.clock(fixed, Optional.empty())).isSameAs(fixed);
  }

  @Test
  void theFaultyClockThrowsOutOfMemoryOnlyInTheNamedThreads() throws InterruptedException {
    Clock faulty = TestFaults.clock(fixed, Optional.of("oom-in-thread:reconcile-"));
    assertThat(faulty.millis()).isEqualTo(1_000_000L);

    AtomicReference<Throwable> thrown = new AtomicReference<>();
    Thread t = new Thread(() -> {
      try {
        faulty.millis();
      } catch (Throwable e) {
        thrown.set(e);
      }
    }, "reconcile-node-a");
    t.start();
    t.join(10_000);
    assertThat(thrown.get()).isInstanceOf(OutOfMemoryError.class).hasMessageContaining("a test");
  }

  @Test
  void anUnknownFaultIsRefused() {
    assertThatThrownBy(() -> TestFaults.clock(fixed, Optional.of("oom-everywhere")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("oom-in-thread:");
  }
}

package io.egressservice.reconcile;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import org.junit.jupiter.api.Test;

/** The one retry backoff of the node agent and the allocator. */
class BackoffTest {

  @Test
  void theFirstRetryWaits100MillisAndEachFurtherOneTwiceAsLongUpToTheCap() {
    Backoff backoff = Backoff.from100Millis(Duration.ofSeconds(30));
    assertThat(backoff.delayMillis(1)).isEqualTo(100);
    assertThat(backoff.delayMillis(2)).isEqualTo(200);
    assertThat(backoff.delayMillis(3)).isEqualTo(400);
    assertThat(backoff.delayMillis(9)).isEqualTo(25_600);
    assertThat(backoff.delayMillis(10)).isEqualTo(30_000);
    assertThat(backoff.delayMillis(Integer.MAX_VALUE)).isEqualTo(30_000);
  }

  @Test
  void aCapBelowTheFirstWaitIsTheWait() {
    assertThat(Backoff.from100Millis(Duration.ofMillis(40)).delayMillis(1)).isEqualTo(40);
  }

  @Test
  void aBackoffWithoutAFirstWaitIsRefused() {
    assertThatThrownBy(() -> new Backoff(Duration.ZERO, Duration.ofSeconds(1)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("positive first wait");
  }
}

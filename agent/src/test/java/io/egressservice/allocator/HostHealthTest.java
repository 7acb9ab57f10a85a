package io.egressservice.allocator;

import static io.egressservice.allocator.ProbeResult.AGENT_DOWN;
import static io.egressservice.allocator.ProbeResult.HEALTHY;
import static io.egressservice.allocator.ProbeResult.NO_ANSWER;
import static io.egressservice.allocator.ProbeResult.UNPROVEN;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Set;
import org.junit.jupiter.api.Test;

class HostHealthTest {
  private static final long MS = 1_000_000L;
  private final HostHealth health =
      new HostHealth(new HostHealth.Settings(2, Duration.ofSeconds(30), Duration.ofSeconds(10)));

  @Test
  void twoUnansweredProbesInARowMakeANodeUnreachable() {
    health.record("a", 0, HEALTHY, 0);
    assertThat(health.record("a", 1, NO_ANSWER, 1500 * MS)).isFalse();
    assertThat(health.isUnreachable("a")).isFalse();
    assertThat(health.record("a", 2, NO_ANSWER, 2000 * MS)).isTrue();
    assertThat(health.unreachable()).containsExactly("a");
  }

  @Test
  void anAnswerBetweenUnansweredProbesResetsTheCount() {
    health.record("a", 0, NO_ANSWER, 0);
    health.record("a", 1, HEALTHY, 500 * MS);
    health.record("a", 2, NO_ANSWER, 1000 * MS);
    assertThat(health.isUnreachable("a")).isFalse();
  }

  @Test
  void overlappingProbesCountByStartOrder() {
    // probe 2 answered (it started later) before probe 1 timed out: probe 1's silence is older news
    health.record("a", 0, HEALTHY, 0);
    health.record("a", 2, HEALTHY, 1000 * MS);
    health.record("a", 1, NO_ANSWER, 1500 * MS);
    health.record("a", 3, NO_ANSWER, 2500 * MS);
    assertThat(health.isUnreachable("a")).isFalse();
  }

  @Test
  void agentRestartRefusedConnectionsMoveNothingWithinTheGrace() {
    health.record("a", 0, HEALTHY, 0);
    for (int i = 1; i <= 20; i++) {
      assertThat(health.record("a", i, AGENT_DOWN, i * 500 * MS)).isFalse();
    }
    health.record("a", 21, HEALTHY, 10_500 * MS);
    assertThat(health.unreachable()).isEmpty();
  }

  @Test
  void agentDownLongerThanTheGraceDrainsTheNode() {
    health.record("a", 0, HEALTHY, 0);
    health.record("a", 1, AGENT_DOWN, 29_000 * MS);
    assertThat(health.isUnreachable("a")).isFalse();
    assertThat(health.record("a", 2, AGENT_DOWN, 30_000 * MS)).isTrue();
  }

  /**
   * An answer that is not provably the agent's counts as a refused connection: interleaved with the agent's own
   * answers it drains nothing, and alone it drains the node only after the agent-down grace, never within two probes
   * as silence would; it never makes the node healthy.
   */
  @Test
  void unprovenAnswersCountAsRefusedConnections() {
    health.record("a", 0, HEALTHY, 0);
    for (int i = 1; i <= 100; i++) {
      health.record("a", i, i % 2 == 0 ? HEALTHY : UNPROVEN, i * 500 * MS);
    }
    assertThat(health.isUnreachable("a")).as("unproven answers between the agent's own").isFalse();
    for (int i = 101; i <= 159; i++) {
      assertThat(health.record("a", i, UNPROVEN, i * 500 * MS)).isFalse();
    }
    assertThat(health.record("a", 160, UNPROVEN, 80_000 * MS)).as("30 s without a proven answer").isTrue();
    health.record("a", 161, UNPROVEN, 100_000 * MS);
    assertThat(health.isUnreachable("a")).as("unproven answers never make it healthy again").isTrue();
  }

  /** Most judged nodes unproven at once: the allocator's own key is the likely fault, so nothing is drained. */
  @Test
  void mostNodesUnprovenAtOnceDrainNothing() {
    for (String n : Set.of("a", "b", "c")) {
      health.record(n, 0, HEALTHY, 0);
    }
    for (int i = 1; i <= 80; i++) {
      health.record("a", i, UNPROVEN, i * 500 * MS);
      health.record("b", i, UNPROVEN, i * 500 * MS);
      health.record("c", i, HEALTHY, i * 500 * MS);
    }
    assertThat(health.selfSuspected(40_000 * MS)).isTrue();
    assertThat(health.unreachable()).isEmpty();
  }

  @Test
  void aReturningNodeIsEligibleOnlyAfterAnsweringHealthyForTheRecoveryTime() {
    health.record("a", 0, NO_ANSWER, 0);
    health.record("a", 1, NO_ANSWER, 500 * MS);
    assertThat(health.isUnreachable("a")).isTrue();
    health.record("a", 2, HEALTHY, 1000 * MS);
    health.record("a", 3, HEALTHY, 6000 * MS);
    // flaps: one silent probe restarts the clock
    health.record("a", 4, NO_ANSWER, 6500 * MS);
    health.record("a", 5, HEALTHY, 7000 * MS);
    assertThat(health.record("a", 6, HEALTHY, 12_000 * MS)).isFalse();
    assertThat(health.isUnreachable("a")).isTrue();
    assertThat(health.record("a", 7, HEALTHY, 17_000 * MS)).isTrue();
    assertThat(health.isUnreachable("a")).isFalse();
  }

  @Test
  void unreachableNodesStayTrackedWhenTheyHostNothing() {
    health.record("a", 0, NO_ANSWER, 0);
    health.record("a", 1, NO_ANSWER, 500 * MS);
    health.record("b", 0, HEALTHY, 0);
    health.retain(Set.of());
    assertThat(health.tracked()).containsExactly("a");
  }
}

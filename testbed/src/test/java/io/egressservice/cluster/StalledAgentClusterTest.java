package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.testbed.Cluster;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A stall of the host's agent process (SIGSTOP for 8 s, as a long GC pause or CPU starvation) with real processes
 * and packets ({@link FailoverScenario}): the node's kernel goes on forwarding and completing the probes'
 * handshakes, so the allocator holds the agent down (grace), not the node gone; nothing moves, no datagram of the
 * host's own and the steered streams is lost or leaves with another source. Power-off still fails over:
 * {@link FailoverClusterTest}.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class StalledAgentClusterTest {
  private static final Duration STALL = Duration.ofSeconds(8);

  /** Closed after the class: SIGKILL ends a stopped agent too. */
  @RegisterExtension
  static final PerClass<FailoverScenario> scenario = new PerClass<>(() -> new FailoverScenario("drop"));

  @Test
  void aStalledHostAgentKeepsItsServices() {
    String host = scenario.get().awaitSteady(Duration.ofSeconds(30));
    Cluster.Node node = scenario.get().cluster().node(host);
    long t0 = System.nanoTime();
    node.suspendAgent();
    long t1;
    try {
      long end = t0 + STALL.toNanos();
      while (System.nanoTime() < end) {
        assertThat(scenario.get().host()).as("status.host %.1f s into the stall of %s's agent",
            (System.nanoTime() - t0) / 1e9, host).isEqualTo(host);
        assertThat(scenario.get().allocator().allocator().unreachableNodes()).as("unreachable nodes").isEmpty();
        pause(100);
      }
      assertThat(node.agent().suspended()).as("the agent was stopped throughout").isTrue();
    } finally {
      node.resumeAgent();
      t1 = System.nanoTime();
    }
    // the streams' datagrams of the stall have arrived (or are lost) a moment later
    pause(500);
    assertThat(scenario.get().host()).as("status.host after the stall").isEqualTo(host);
    assertThat(scenario.get().lostBetween(t0, t1)).as("datagrams lost during the stall").isZero();
    assertThat(scenario.get().leakedSince(t0)).as("datagrams seen outside with another source than the LB IP").isZero();
    assertThat(scenario.get().awaitSteady(Duration.ofSeconds(10))).as("every stream still leaves via the host")
        .isEqualTo(host);
    await("the agent answers again after the stall").atMost(Duration.ofSeconds(10))
        .pollInterval(Duration.ofMillis(100)).ignoreExceptions().until(() -> !node.agent().metrics().isEmpty());
    assertThat(scenario.get().allocator().allocator().failoverSeconds()).as("failovers").isEmpty();
  }

  private static void pause(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

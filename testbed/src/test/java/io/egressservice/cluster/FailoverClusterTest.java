package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import static org.awaitility.Awaitility.await;

import io.egressservice.testbed.Cluster;
import java.time.Duration;
import java.util.Optional;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.TestMethodOrder;

/**
 * Failover with real processes and packets ({@link FailoverScenario}): the host powered off moves the service
 * within seconds and nothing leaves with another source meanwhile ({@code --no-host=drop}); a restart of the
 * host's agent moves nothing and loses nothing. First, before anything has failed over, a stall of the host's agent
 * process (SIGSTOP for 8 s, as a long GC pause or CPU starvation): the node's kernel goes on forwarding and
 * completing the probes' handshakes, so the allocator holds the agent down (grace), not the node gone; nothing
 * moves, no datagram of the host's own and the steered streams is lost or leaves with another source.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class FailoverClusterTest {
  private static final Duration STALL = Duration.ofSeconds(8);

  @RegisterExtension
  static final PerClass<FailoverScenario> scenario = new PerClass<>(() -> new FailoverScenario("drop"));

  @Test
  @Order(0)
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

  @Test
  @Order(1)
  void hostAgentRestartMovesNothingAndLosesNothing() {
    String host = scenario.get().awaitSteady(Duration.ofSeconds(30));
    long t0 = System.nanoTime();
    scenario.get().cluster().node(host).agent().kill();
    scenario.get().cluster().node(host).agent().start();
    scenario.get().cluster().node(host).agent().awaitReady();
    long t1 = System.nanoTime();
    assertThat(scenario.get().host()).as("status.host after the host's agent restarted").isEqualTo(host);
    assertThat(scenario.get().allocator().allocator().unreachableNodes()).isEmpty();
    assertThat(scenario.get().lostBetween(t0, t1)).as("datagrams lost while the host's agent restarted").isZero();
  }

  @Test
  @Order(2)
  void hostPowerOffMovesTheServiceWithinSecondsAndNothingLeaksWithAnotherSource() {
    scenario.get().awaitSteady(Duration.ofSeconds(30));
    FailoverScenario.Outcome o = scenario.get().powerOffHost(Duration.ofSeconds(20));
    System.out.printf("failover %s -> %s: recovery %s s, leaked %d %s%n", o.oldHost(), o.newHost(),
        o.recoverySeconds(), o.leaked(), o.leakedSamples());
    assertThat(o.leaked()).as("datagrams seen outside with a source other than the LB IP: %s", o.leakedSamples())
        .isZero();
    // the goal is 3 s; a 2-core machine shared with other builds gets some slack in a test
    assertThat(o.max()).as("seconds from power-off to the streams arriving via the new host").isLessThan(6.0);
    assertThat(scenario.get().allocator().allocator().failoverSeconds()).hasSize(1);
  }

  @Test
  @Order(3)
  void withoutAnEligibleHostTheEndpointsAreDroppedAndCountedNotReSourced() {
    scenario.get().awaitSteady(Duration.ofSeconds(30));
    long t0 = System.nanoTime();
    scenario.get().cluster().api().applyEgressService(FailoverScenario.SERVICE, SourceIPBy.LOADBALANCERIP, "",
        Optional.of("no-such-node"));
    await().atMost(Duration.ofSeconds(10)).until(() -> scenario.get().host().isEmpty());
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(200)).until(() ->
        NoHostDrops.total(scenario.get().cluster()) > 100);
    assertThat(scenario.get().leakedSince(t0)).as("datagrams seen outside with another source while no node hosts")
        .isZero();
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

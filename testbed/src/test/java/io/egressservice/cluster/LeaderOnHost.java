package io.egressservice.cluster;

import static org.awaitility.Awaitility.await;

import io.egressservice.testbed.Cluster;
import java.time.Duration;
import java.util.Optional;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Sets up the case where the leading allocator dies with the host ({@link FailoverScenario#withAllocatorInAgents}),
 * as {@code AllocatorPartitionClusterTest#leaderDyingWithItsHostFailsOverWithinSixSeconds} does: the leader's node
 * becomes the host through a nodeSelector, then the selector goes (the host stays while it qualifies), and the
 * followers have seen status.host (so they probe the host) before the power goes.
 */
public final class LeaderOnHost {
  private LeaderOnHost() {}

  /**
   * Makes the leader's node the host; returns it. A stream that does not arrive through it with the LB IP after the
   * move is replaced by a new flow and given to {@code report}. Bounded: about 80 s at most.
   */
  public static String arrange(FailoverScenario s, java.util.function.Consumer<FailoverScenario.Renewed> report) {
    Cluster c = s.cluster();
    String leaderNode = await().atMost(Duration.ofSeconds(30)).pollInterval(Duration.ofMillis(200))
        .until(() -> LeaseHolder.node(c), Optional::isPresent).orElseThrow();
    c.api().applyEgressService(FailoverScenario.SERVICE, SourceIPBy.LOADBALANCERIP, "", Optional.of(leaderNode));
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(100))
        .until(() -> s.host().equals(leaderNode));
    c.api().applyEgressService(FailoverScenario.SERVICE, SourceIPBy.LOADBALANCERIP, "", Optional.empty());
    for (FailoverScenario.Renewed r : s.renewStuckStreams(Duration.ofSeconds(10))) {
      report.accept(r);
    }
    String host = s.awaitSteady(Duration.ofSeconds(30));
    if (!host.equals(leaderNode)) {
      throw new IllegalStateException("the host moved from the leader's node " + leaderNode + " to " + host);
    }
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).until(() ->
        c.nodes().stream().filter(n -> !n.name().equals(leaderNode))
            .allMatch(n -> n.agent().metric("egress_service_agent_allocator_leader") == 0));
    // the followers' caches show status.host, so they probe it (two probe intervals and more)
    try {
      Thread.sleep(2000);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
    Optional<String> still = LeaseHolder.node(c);
    if (!still.equals(Optional.of(leaderNode)) || !s.host().equals(leaderNode)) {
      throw new IllegalStateException("before the power-off the leader is " + still + " and the host " + s.host()
          + ", not both " + leaderNode);
    }
    return leaderNode;
  }
}

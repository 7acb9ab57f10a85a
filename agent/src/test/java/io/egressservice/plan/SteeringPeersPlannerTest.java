package io.egressservice.plan;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.SteeringConfig;
import io.egressservice.model.RemoteEndpoints;
import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.outcome;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * What the guard table is written from: who may send to the steering port (every Node's InternalIPs, and every
 * Node address the port is kept from), and on the host which endpoints arrive steered.
 */
class SteeringPeersPlannerTest {
  static final String A = SteeringPlannerTest.A;
  static final String B = SteeringPlannerTest.B;
  static final String C = SteeringPlannerTest.C;

  @Test
  void everyNodeKnowsTheInternalIpsOfAllNodesAsSteeringPeers() {
    Fixture f = SteeringPlannerTest.cluster(A)
        .node("node-d", List.of("192.168.1.13", "198.51.100.13"), "10.128.3.0/24");
    for (String node : List.of(A, C)) {
      SteeringPeers peers = f.plan(node).steering().peers();
      assertThat(peers.steers()).isTrue();
      assertThat(peers.nodeInternalIps()).as("on %s", node).extracting(IpPrefix::toString)
          .containsExactly("192.168.1.10", "192.168.1.11", "192.168.1.12", "fd00::a", "fd00::b");
      assertThat(peers.nodeAddresses()).as("on %s: InternalIPs and the other addresses of Nodes", node)
          .extracting(IpPrefix::toString).contains("192.168.1.10", "192.168.1.13", "198.51.100.13", "fd00::b");
    }
  }

  @Test
  void withRemoteEndpointsReportNoNodeIsAPeer() {
    Fixture f = SteeringPlannerTest.cluster(A);
    f.config(PlanConfig.defaults().withSteering(
        new SteeringConfig(RemoteEndpoints.REPORT, SteeringConfig.DEFAULT_FIRST_TABLE, SteeringConfig.DEFAULT_PORT)));
    assertThat(f.plan(A).steering().peers()).isEqualTo(SteeringPeers.NONE);
  }

  /**
   * An endpoint without a nodeName is steered by the node whose pod CIDR holds it; the host must count it as
   * arriving steered too, or its guard would drop it at the tunnel.
   */
  @Test
  void theHostCountsAnEndpointWithoutNodeNameInAnotherNodesPodCidrAsSteeredIn() {
    Fixture f = SteeringPlannerTest.cluster(A).slice("web", "web-anon", "IPv4", ep("10.128.1.6", null));

    assertThat(f.plan(B).steering().endpoints()).extracting(e -> e.source().toString()).contains("10.128.1.6");
    assertThat(outcome(f.plan(A), "web").steeredIn()).contains("10.128.1.6");
  }
}

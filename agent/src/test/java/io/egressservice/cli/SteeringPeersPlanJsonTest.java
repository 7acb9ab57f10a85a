package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Test;

/** {@code plan --output json} names who may send to the steering port (an added field; none renamed). */
class SteeringPeersPlanJsonTest {
  @Test
  void planJsonListsTheNodesThatMaySendToTheSteeringPort() throws Exception {
    JsonNode plan = SteeringPlanCommandTest.json(InProcess.run("plan", "--objects", "examples", "--node", "node-b",
        "--service-cidr", "172.30.0.0/16", "-o", "json"));
    JsonNode peers = plan.path("steeringPeers");
    assertThat(peers.path("enforced").asBoolean()).isTrue();
    assertThat(peers.path("nodeInternalIps").toString()).contains("\"192.168.1.10\"");
    assertThat(peers.path("nodeAddresses").toString()).contains("\"192.168.1.10\"");
    assertThat(plan.fieldNames()).toIterable().contains("steering", "steeringRoutes", "steeringDevice", "services");
  }

  @Test
  void withRemoteEndpointsReportNoPortIsGuarded() throws Exception {
    JsonNode plan = SteeringPlanCommandTest.json(InProcess.run("plan", "--objects", "examples", "--node", "node-b",
        "--remote-endpoints", "report", "-o", "json"));
    assertThat(plan.path("steeringPeers").path("enforced").asBoolean()).isFalse();
    assertThat(plan.path("steeringPeers").path("nodeInternalIps")).isEmpty();
  }
}

package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.junit.jupiter.api.Test;

/** {@code plan} shows steering: which endpoint goes to which host, in JSON and text; the flag. */
class SteeringPlanCommandTest {
  static JsonNode json(InProcess.Result r) throws Exception {
    assertThat(r.exit()).as(r.err()).isZero();
    return new ObjectMapper().readTree(r.out());
  }

  @Test
  void planJsonListsTheSteeredEndpointsOfANodeThatIsNotTheHost() throws Exception {
    JsonNode plan = json(InProcess.run("plan", "--objects", "examples", "--node", "node-b", "--service-cidr",
        "172.30.0.0/16", "-o", "json"));
    assertThat(plan.path("steering")).hasSize(1);
    JsonNode e = plan.path("steering").get(0);
    assertThat(e.path("service").asText()).isEqualTo("default/web");
    assertThat(e.path("source").asText()).isEqualTo("10.128.1.7");
    assertThat(e.path("host").asText()).isEqualTo("node-a");
    assertThat(e.path("hostAddress").asText()).isEqualTo("192.168.1.10");
    assertThat(e.path("family").asText()).isEqualTo("inet");
    assertThat(e.path("table").asLong()).isEqualTo(7000);
    assertThat(plan.path("steeringRoutes").toString()).contains("\"hostAddress\":\"192.168.1.10\"");
    assertThat(plan.path("steeringDevice").path("wanted").asBoolean()).isTrue();
    // the fields of DESIGN section 4 are all still there
    assertThat(plan.fieldNames()).toIterable().contains("node", "rules", "snat", "inCluster", "services");
  }

  @Test
  void theHostsPlanSaysWhichEndpointsArriveSteered() throws Exception {
    JsonNode plan = json(InProcess.run("plan", "--objects", "examples", "--node", "node-a", "--service-cidr",
        "172.30.0.0/16", "-o", "json"));
    JsonNode web = null;
    for (JsonNode s : plan.path("services")) {
      if (s.path("service").asText().equals("default/web")) {
        web = s;
      }
    }
    assertThat(web).isNotNull();
    assertThat(web.path("steeredIn").toString()).contains("10.128.1.7");
    assertThat(web.path("remoteEndpoints")).isEmpty();
    assertThat(plan.path("steering")).isEmpty();
  }

  @Test
  void remoteEndpointsReportStopsSteeringAndTheFlagIsValidated() throws Exception {
    JsonNode plan = json(InProcess.run("plan", "--objects", "examples", "--node", "node-b", "--remote-endpoints",
        "report", "-o", "json"));
    assertThat(plan.path("steering")).isEmpty();
    assertThat(plan.path("rules").toString()).doesNotContain("7000");

    InProcess.Result bad = InProcess.run("plan", "--objects", "examples", "--node", "node-b", "--remote-endpoints", "tunnel");
    assertThat(bad.exit()).isEqualTo(1);
    assertThat(bad.err()).contains("--remote-endpoints must be steer or report, not 'tunnel'");
  }

  @Test
  void planTextHasTheDeviceAndTheRouteAsCommands() {
    InProcess.Result r = InProcess.run("plan", "--objects", "examples", "--node", "node-b");
    assertThat(r.out()).contains("ip link add egress-vx type vxlan external gpe dstport 4799 nolearning")
        .contains("ip -4 route add default dev egress-vx encap ip id 1 dst 192.168.1.10 csum table 7000 protocol 201")
        .contains("#   steered to the host: 10.128.1.7 -> node-a (192.168.1.10)")
        .contains("ip -4 rule add priority 5000 from 10.128.1.7 lookup 7000 protocol 201  # default/web");
    assertThat(InProcess.run("plan", "--objects", "examples", "--node", "node-b", "--steer-port", "6000").out())
        .contains("dstport 6000");
  }
}

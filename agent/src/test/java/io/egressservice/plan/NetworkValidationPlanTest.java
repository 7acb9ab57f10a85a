package io.egressservice.plan;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.SteeringConfig;
import io.egressservice.model.RemoteEndpoints;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.sourceRules;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code spec.network} as the CRD allows it, checked by the plan itself (OVN-Kubernetes' CRD has no pattern): a
 * table number 1..4294967294 without leading zero or a name as rt_tables and VRF devices allow; never the kernel's
 * tables, never one of the agent's own steering tables, by number or by a name that resolves to one.
 */
class NetworkValidationPlanTest {
  static final String NODE = ReservedRoutingTablesTest.NODE;

  static Fixture web(String network) {
    return ReservedRoutingTablesTest.web(network);
  }

  @ParameterizedTest
  @ValueSource(strings = {"4294967295", "4294967296", "99999999999", "0100", "-1", "1 2", "a;b", "evil\ntouch /tmp/x",
      ".hidden", "x123456789012345678901234567890123456789012345678901234567890123"})
  void networksTheCrdRefusesAreRefusedOnEveryNode(String network) {
    for (Fixture f : List.of(web(network), web(network).offline())) {
      DesiredState s = f.plan(NODE);

      assertThat(outcome(s, "web").configured()).isFalse();
      assertThat(outcome(s, "web").reason()).startsWith(NetworkNames.INVALID + "'" + network + "'");
      assertThat(s.rules()).isEmpty();
      assertThat(s.snat()).isEmpty();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"4294967294", "1", "1337", "vrf-blue", "_t.1", "x12345678901234567890123456789012345678901234567890123456789012"})
  void networksTheCrdAllowsAreRouted(String network) {
    DesiredState s = web(network).offline().plan(NODE);

    assertThat(outcome(s, "web").configured()).isTrue();
    assertThat(sourceRules(s)).anyMatch(r -> r.startsWith("5000: from 10.128.0.5 lookup " + network + " "));
  }

  @Test
  void withoutANetworkOnlySnatIsPlanned() {
    DesiredState s = web("").plan(NODE);

    assertThat(outcome(s, "web").configured()).isTrue();
    assertThat(s.rules()).isEmpty();
    assertThat(s.snat()).hasSize(1);
  }

  @ParameterizedTest
  @ValueSource(strings = {"7000", "7001", "7255"})
  void theAgentsSteeringTablesAreNoEgressNetwork(String network) {
    DesiredState s = web(network).plan(NODE);

    assertThat(outcome(s, "web").configured()).isFalse();
    assertThat(outcome(s, "web").reason()).startsWith("network '" + network + "' is table " + network)
        .contains("steering tables (--steer-table 7000: 7000 to 7255)");
    assertThat(s.rules()).isEmpty();
  }

  @Test
  void aNameResolvingToASteeringTableIsRefused() {
    DesiredState s = web("tenant").networkName("tenant", 7003).plan(NODE);

    assertThat(outcome(s, "web").reason()).startsWith("network 'tenant' resolves to table 7003")
        .contains("steering tables");
    assertThat(s.rules()).isEmpty();
  }

  @Test
  void theSteeringRangeFollowsSteerTable() {
    SteeringConfig from9000 = new SteeringConfig(RemoteEndpoints.STEER, 9000, SteeringConfig.DEFAULT_PORT);
    Fixture f = web("9000").config(PlanConfig.defaults().withSteering(from9000));

    assertThat(outcome(f.plan(NODE), "web").reason()).contains("--steer-table 9000");
    assertThat(outcome(web("7000").config(PlanConfig.defaults().withSteering(from9000)).plan(NODE), "web")
        .configured()).isTrue();
    assertThat(outcome(web("7256").plan(NODE), "web").configured()).isTrue();
  }
}

package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.NodeInfo;
import io.egressservice.plan.NodeInputs;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.Planner;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import io.egressservice.plan.TableRoutes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A service's network table without a route of a family the service uses: that traffic falls through the table to
 * the next rule (usually main). The plan says so from the node's facts (which families the table has a route of),
 * and the node acting for the service says it in a NetworkHasNoRoute Warning Event, then WarningResolved.
 */
class NetworkRouteWarningTest {
  static final String NODE = "node-a";
  static final ObjectRef WEB = new ObjectRef("default", "web");

  record Emitted(String type, String reason, String message) {}

  static NodeInputs inputs(String network, String host, NetworkResolution networks) {
    return new NodeInputs(NODE,
        List.of(new EgressServiceInfo(WEB, Optional.empty(), SourceIpBy.LOAD_BALANCER_IP, network, host)),
        List.of(new ServiceInfo(WEB, "LoadBalancer", List.of("172.30.0.10"), List.of(new ServiceInfo.Ingress("5.5.5.5", "")))),
        List.of(new EndpointSliceInfo(new ObjectRef("default", "web-1"), "web", "IPv4",
            List.of(new EndpointSliceInfo.Endpoint(List.of("10.128.0.5"), Optional.of(NODE))))),
        List.of(new NodeInfo(NODE, List.of("192.168.1.10"), List.of("10.128.0.0/24")),
            new NodeInfo("node-b", List.of("192.168.1.11"), List.of("10.128.1.0/24"))),
        List.of(), networks,
        PlanConfig.defaults().withCidrs(List.of(), List.of(IpPrefix.parse("172.30.0.0/16")), List.of()));
  }

  static NetworkResolution tableRoutes(Map<Long, Set<IpFamily>> families) {
    return new NetworkResolution(Map.of("blue", 100L), Map.of(), false, new TableRoutes(families));
  }

  @Test
  void aTableWithoutARouteOfTheServicesFamilyIsAWarningOnTheHost() {
    DesiredState plan = Planner.plan(inputs("blue", NODE, tableRoutes(Map.of(100L, Set.of(IpFamily.V6)))));

    assertThat(plan.services()).singleElement().satisfies(o -> {
      assertThat(o.configured()).isTrue();
      assertThat(o.warnings()).containsExactly("no IPv4 route in table 100 (network 'blue') on this node: this"
          + " service's IPv4 traffic that its rules send there falls through to the next rule (usually the main"
          + " table) and leaves by the node's own routes; add an IPv4 route (e.g. a default route) to table 100");
    });
  }

  @Test
  void aRouteOfTheFamilyAnUnreadTableOrANodeWithoutTheServicesRulesLeaveNothingToWarnAbout() {
    assertThat(Planner.plan(inputs("blue", NODE, tableRoutes(Map.of(100L, Set.of(IpFamily.V4))))).services().get(0)
        .warnings()).isEmpty();
    assertThat(Planner.plan(inputs("blue", NODE, new NetworkResolution(Map.of("blue", 100L), Map.of(), false)))
        .services().get(0).warnings()).as("routes not read").isEmpty();
    assertThat(Planner.plan(inputs("blue", "node-b", tableRoutes(Map.of(100L, Set.of())))).services().get(0)
        .warnings()).as("not the host: its kernel does not apply the network").isEmpty();
  }

  @Test
  void aTableNumberIsNamedAsSuch() {
    assertThat(Planner.plan(inputs("100", NODE, tableRoutes(Map.of(100L, Set.of())))).services().get(0).warnings())
        .singleElement().asString().startsWith("no IPv4 route in table 100 on this node: ");
  }

  @Test
  void theHostSaysItInAWarningEventThenThatItIsResolved() {
    List<Emitted> out = new ArrayList<>();
    OutcomeReporter reporter = new OutcomeReporter((es, type, reason, message) ->
        out.add(new Emitted(type, reason, message)), NODE);

    reporter.report(Planner.plan(inputs("blue", NODE, tableRoutes(Map.of(100L, Set.of())))));
    reporter.report(Planner.plan(inputs("blue", NODE, tableRoutes(Map.of(100L, Set.of()))))); // a resync
    reporter.report(Planner.plan(inputs("blue", NODE, tableRoutes(Map.of(100L, Set.of(IpFamily.V4))))));

    assertThat(out).extracting(Emitted::reason).containsExactly("EgressConfigured", "NetworkHasNoRoute",
        "WarningResolved");
    assertThat(out.get(1).type()).isEqualTo("Warning");
    assertThat(out.get(1).message()).startsWith("on node node-a: no IPv4 route in table 100 (network 'blue')");
    assertThat(out.get(2).type()).isEqualTo("Normal");
    assertThat(out.get(2).message()).startsWith("on node node-a: resolved: no IPv4 route in table 100");
  }
}

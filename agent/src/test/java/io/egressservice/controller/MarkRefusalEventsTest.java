package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.NodeInfo;
import io.egressservice.plan.NodeInputs;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.Planner;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** A service refused because the node's marks ran out is told as a Warning Event by that node, once. */
class MarkRefusalEventsTest {
  static final String NODE = "node-a";

  record Emitted(String name, String type, String reason, String message) {}

  @Test
  void aServiceLeftWithoutAMarkIsAWarningEventNamingTheMask() {
    ObjectRef web = new ObjectRef("default", "web");
    ObjectRef late = new ObjectRef("default", "late");
    Instant t0 = Instant.parse("2026-01-01T00:00:00Z");
    NodeInputs in = new NodeInputs(NODE,
        List.of(new EgressServiceInfo(web, Optional.of(t0), SourceIpBy.LOAD_BALANCER_IP, "100", NODE),
            new EgressServiceInfo(late, Optional.of(t0.plusSeconds(1)), SourceIpBy.LOAD_BALANCER_IP, "200", NODE)),
        List.of(new ServiceInfo(web, "LoadBalancer", List.of("172.30.0.10"), List.of(new ServiceInfo.Ingress("5.5.5.5", ""))),
            new ServiceInfo(late, "LoadBalancer", List.of("172.30.0.11"), List.of(new ServiceInfo.Ingress("5.5.5.6", "")))),
        List.of(new EndpointSliceInfo(new ObjectRef("default", "late-1"), "late", "IPv4",
            List.of(new EndpointSliceInfo.Endpoint(List.of("10.128.0.6"), Optional.of(NODE))))),
        List.of(new NodeInfo(NODE, List.of("192.168.1.10"), List.of("10.128.0.0/24"))),
        List.of(), NetworkResolution.offlineResolution(),
        PlanConfig.defaults().withCidrs(List.of(), List.of(IpPrefix.parse("172.30.0.0/16")), List.of())
            .withRuleMode(RuleMode.MARK, 0x1000000L));
    List<Emitted> out = new ArrayList<>();
    OutcomeReporter reporter = new OutcomeReporter((es, type, reason, message) ->
        out.add(new Emitted(es.name(), type, reason, message)), NODE);

    reporter.report(Planner.plan(in));
    reporter.report(Planner.plan(in)); // a resync: nothing new

    assertThat(out).filteredOn(e -> e.name().equals("late")).singleElement().satisfies(e -> {
      assertThat(e.type()).isEqualTo("Warning");
      assertThat(e.reason()).isEqualTo("MarkUnavailable");
      assertThat(e.message()).startsWith("on node node-a: no free mark for table 200 in --mark-mask 0x1000000");
    });
    assertThat(out).filteredOn(e -> e.name().equals("web")).extracting(Emitted::reason)
        .containsExactly("EgressConfigured");
  }
}

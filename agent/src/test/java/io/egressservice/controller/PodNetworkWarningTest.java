package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;

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
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Nodes without {@code spec.podCIDRs} and no {@code --cluster-cidr}: the agent cannot tell traffic to other pods from
 * traffic out of the cluster, so a configured service's in-cluster traffic takes its network and SNAT. The plan says
 * so on the service's outcome, and the node acting for it says it in a Warning Event (and its log line), then in a
 * Normal Event once the pod network is known, so explain and status stop showing it.
 */
class PodNetworkWarningTest {
  static final String NODE = "node-a";
  static final ObjectRef WEB = new ObjectRef("default", "web");

  record Emitted(String type, String reason, String message) {}

  static NodeInputs inputs(List<String> podCidrs, List<IpPrefix> clusterCidrs) {
    return new NodeInputs(NODE,
        List.of(new EgressServiceInfo(WEB, Optional.empty(), SourceIpBy.LOAD_BALANCER_IP, "100", NODE)),
        List.of(new ServiceInfo(WEB, "LoadBalancer", List.of("172.30.0.10"), List.of(new ServiceInfo.Ingress("5.5.5.5", "")))),
        List.of(new EndpointSliceInfo(new ObjectRef("default", "web-1"), "web", "IPv4",
            List.of(new EndpointSliceInfo.Endpoint(List.of("10.128.0.5"), Optional.of(NODE))))),
        List.of(new NodeInfo(NODE, List.of("192.168.1.10"), podCidrs)),
        List.of(), NetworkResolution.offlineResolution(),
        PlanConfig.defaults().withCidrs(clusterCidrs, List.of(IpPrefix.parse("172.30.0.0/16")), List.of()));
  }

  @Test
  void aConfiguredServiceIsWarnedThatThePodNetworkIsUnknown() {
    DesiredState plan = Planner.plan(inputs(List.of(), List.of()));

    assertThat(plan.services()).singleElement().satisfies(o -> {
      assertThat(o.configured()).isTrue();
      assertThat(o.warnings()).containsExactly("the pod network of IPv4 is unknown (no Node has spec.podCIDRs of it"
          + " and --cluster-cidr names none): this service's endpoints' traffic to other pods takes its network and"
          + " SNAT as if it left the cluster; set --cluster-cidr");
    });
  }

  @Test
  void aPodCidrOrClusterCidrLeavesNothingToWarnAbout() {
    assertThat(Planner.plan(inputs(List.of("10.128.0.0/24"), List.of())).services().get(0).warnings()).isEmpty();
    assertThat(Planner.plan(inputs(List.of(), List.of(IpPrefix.parse("10.128.0.0/14")))).services().get(0).warnings())
        .isEmpty();
  }

  @Test
  void theHostSaysItInAWarningEventThenThatItIsResolved() {
    List<Emitted> out = new ArrayList<>();
    OutcomeReporter reporter = new OutcomeReporter((es, type, reason, message) ->
        out.add(new Emitted(type, reason, message)), NODE);

    reporter.report(Planner.plan(inputs(List.of(), List.of())));
    reporter.report(Planner.plan(inputs(List.of(), List.of()))); // a resync: nothing new
    reporter.report(Planner.plan(inputs(List.of("10.128.0.0/24"), List.of())));

    assertThat(out).extracting(Emitted::reason).containsExactly("EgressConfigured", "PodNetworkUnknown",
        "WarningResolved");
    assertThat(out.get(1).type()).isEqualTo("Warning");
    assertThat(out.get(1).message()).startsWith("on node node-a: the pod network of IPv4 is unknown");
    assertThat(out.get(2).type()).isEqualTo("Normal");
    assertThat(out.get(2).message()).startsWith("on node node-a: resolved: the pod network of IPv4 is unknown");
  }
}

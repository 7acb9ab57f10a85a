package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.Planner;
import io.egressservice.plan.ServiceOutcome;
import io.egressservice.plan.ServiceOutcome.SkippedEndpoint;
import io.egressservice.plan.SteeredEndpoint;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The Events of steering: EndpointsSteered on change only, Warnings for what cannot be steered. */
class SteeringEventsTest {
  static final ObjectRef WEB = new ObjectRef("default", "web");
  final List<String> events = new ArrayList<>();
  final OutcomeReporter reporter = new OutcomeReporter((es, type, reason, message) ->
      events.add(type + " " + reason + ": " + message), "node-b");

  static SteeredEndpoint steered(String source, String host, String hostAddress) {
    return new SteeredEndpoint(WEB, IpPrefix.parse(source), host, IpPrefix.parse(hostAddress), 7000);
  }

  static DesiredState state(ServiceOutcome o) {
    return DesiredState.builder().node("node-b").priority(5000).ruleProtocol(201)
        .services(List.of(o)).build();
  }

  static ServiceOutcome steering(List<SkippedEndpoint> skipped, SteeredEndpoint... e) {
    return new ServiceOutcome(WEB, true, "steers " + e.length + " endpoint(s) of this node to host " + e[0].host(),
        skipped, List.of(), List.of(e), List.of());
  }

  @Test
  void endpointsSteeredOnceWhileTheHostStaysAndAgainWhenItMoves() {
    reporter.report(state(steering(List.of(), steered("10.128.1.5", "node-a", "192.168.1.10"))));
    reporter.report(state(steering(List.of(), steered("10.128.1.5", "node-a", "192.168.1.10"),
        steered("10.128.1.6", "node-a", "192.168.1.10"))));
    assertThat(events).containsExactly("Normal EndpointsSteered: node node-b steers its endpoints of this service to"
        + " host node-a (192.168.1.10) over egress-vx, where they leave with the LoadBalancer IP");

    reporter.report(state(steering(List.of(), steered("10.128.1.5", "node-c", "192.168.1.12"))));
    assertThat(events).hasSize(2);
    assertThat(events.get(1)).contains("host node-c (192.168.1.12)");
  }

  @Test
  void aFamilyThatCannotBeSteeredIsAWarning() {
    reporter.report(state(steering(
        List.of(new SkippedEndpoint("fd10:128:1::5", "host node-a has no IPv6 InternalIP: not steered (never guessed)")),
        steered("10.128.1.5", "node-a", "192.168.1.10"))));
    assertThat(events).anySatisfy(e -> assertThat(e).startsWith("Warning EndpointsRefused")
        .contains("fd10:128:1::5 (host node-a has no IPv6 InternalIP"));
  }

  @Test
  void nothingSteerableIsSteeringUnavailable() {
    reporter.report(state(new ServiceOutcome(WEB, false, Planner.NOT_STEERED + "node-a: host node-a has no IPv6 InternalIP",
        List.of(new SkippedEndpoint("fd10:128:1::5", "host node-a has no IPv6 InternalIP: not steered (never guessed)")),
        List.of())));
    assertThat(events).hasSize(2).first().asString()
        .isEqualTo("Warning SteeringUnavailable: on node node-b: not steered to host node-a: host node-a has no IPv6"
            + " InternalIP");
    assertThat(events.get(1)).startsWith("Warning EndpointsRefused");
    reporter.report(state(new ServiceOutcome(WEB, false, Planner.NOT_STEERED + "node-a: host node-a has no IPv6 InternalIP",
        List.of(new SkippedEndpoint("fd10:128:1::5", "host node-a has no IPv6 InternalIP: not steered (never guessed)")),
        List.of())));
    assertThat(events).as("on change only: the same outcome again says nothing").hasSize(2);
  }
}

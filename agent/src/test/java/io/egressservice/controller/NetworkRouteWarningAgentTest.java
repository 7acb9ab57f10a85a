package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * A real agent on a real kernel: the service's network is table 200, which holds nothing but the agent's own throw
 * routes, so its IPv4 egress falls through to the main table. The agent says so in a NetworkHasNoRoute Warning
 * Event, and once a route is added to the table it says WarningResolved without waiting for the resync (10 minutes
 * here): the route's notification brings the reconcile that reads the table again.
 */
@EnableKubernetesMockClient(crud = true)
class NetworkRouteWarningAgentTest {
  static final Duration WAIT = Duration.ofSeconds(20);

  KubernetesClient client;

  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("noroute");

  @Test
  void anEmptyNetworkTableIsAWarningUntilARouteOfTheFamilyIsAdded() {
    kernel.createService("web", "200", "10.128.0.5");
    kernel.start(new NodeAgent.Settings(AgentKernel.NODE, PlanConfig.defaults(), Duration.ofMinutes(10),
        Duration.ofSeconds(2), EventsTest.LIMITS), new AgentMetrics());

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("NetworkHasNoRoute")).singleElement()
        .satisfies(e -> {
          assertThat(e.getType()).isEqualTo("Warning");
          assertThat(e.getMessage()).startsWith("on node node-a: no IPv4 route in table 200 on this node:");
        }));
    assertThat(kernel.ns().exec("ip", "route", "show", "table", "200")).as("only the agent's throw routes")
        .contains("throw ").contains("proto 201").doesNotContain("blackhole");

    kernel.ns().exec("ip", "route", "add", "blackhole", "default", "table", "200");

    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.events("WarningResolved")).singleElement()
        .extracting(Event::getMessage).asString()
        .startsWith("on node node-a: resolved: no IPv4 route in table 200"));
    assertThat(kernel.events("NetworkHasNoRoute")).hasSize(1);
  }
}

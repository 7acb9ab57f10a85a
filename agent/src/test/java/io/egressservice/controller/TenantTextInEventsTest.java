package io.egressservice.controller;

import static io.egressservice.controller.EventsTest.counter;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * An Event's message quotes what others wrote (here an EndpointSlice's {@code managed-by} label, whose value the
 * mock server does not validate; {@code spec.network} with control characters is refused by the plan before it
 * reaches a message): {@code kubectl describe} and log pipelines print it as it is, so it is written escaped; a
 * restarted agent still recognises the Event as what it would say now.
 */
@EnableKubernetesMockClient(crud = true)
class TenantTextInEventsTest {
  static final String MANAGER = "evil\ntouch /tmp/PWNED #\u001b[8m\u202e";
  static final String SHOWN = "evil\\ntouch /tmp/PWNED #\\x1b[8m\\u202e";

  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("tenant-events");

  NodeAgent start(AgentMetrics metrics) {
    NodeAgent agent = kernel.start(new NodeAgent.Settings(AgentKernel.NODE, PlanConfig.defaults(),
        Duration.ofMinutes(10), Duration.ofSeconds(2), EventsTest.LIMITS), metrics);
    await().atMost(EventsTest.WAIT).until(() -> agent.readiness().ok() && agent.eventsIdle());
    return agent;
  }

  @Test
  void controlCharactersOthersWroteAreEscapedInTheEventAndNotReportedAgainAfterARestart() throws Exception {
    kernel.createService("web", "100", "10.128.0.5");
    EndpointSlice forged = KubeObjects.slice("web", "web-2", AgentKernel.NODE, "10.128.0.6");
    forged.getMetadata().getLabels().put("endpointslice.kubernetes.io/managed-by", MANAGER);
    client.discovery().v1().endpointSlices().resource(forged).create();
    NodeAgent agent = start(new AgentMetrics());
    await().atMost(EventsTest.WAIT).untilAsserted(() -> assertThat(kernel.events("EndpointsRefused")).hasSize(1));

    Event event = kernel.events("EndpointsRefused").get(0);
    assertThat(event.getMessage()).contains("is managed by '" + SHOWN + "'")
        .doesNotContain("\n", "\u001b", "\u202e");

    agent.close();
    AgentMetrics metrics = new AgentMetrics();
    start(metrics);
    assertThat(counter(metrics, "egress_service_agent_events_written", "op", "create")).isZero();
    assertThat(counter(metrics, "egress_service_agent_events_written", "op", "patch")).isZero();
    assertThat(kernel.events("EndpointsRefused")).singleElement().extracting(Event::getMessage)
        .isEqualTo(event.getMessage());
  }
}

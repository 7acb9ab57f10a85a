package io.egressservice.events;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.ObjectReference;
import io.fabric8.kubernetes.api.model.ObjectReferenceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * The one writer of the agent's and the allocator's Events: what others wrote is escaped in the message, a long
 * message is cut visibly, a long object name still gives a valid Event name, and a repeat raises the count of the
 * Event written before.
 */
@EnableKubernetesMockClient(crud = true)
class EventWriterTest {
  private static final Clock CLOCK = Clock.fixed(Instant.parse("2026-12-08T00:00:00.600Z"), ZoneOffset.UTC);

  static KubernetesClient client;

  private EventWriter writer() {
    return new EventWriter(client, "egress-service-agent", "node-a", "node-a", Map.of("egress-service-agent/node",
        "node-a"), CLOCK);
  }

  private static ObjectReference service(String name) {
    return new ObjectReferenceBuilder().withApiVersion("k8s.ovn.org/v1").withKind("EgressService")
        .withNamespace("shop").withName(name).build();
  }

  private Event read(String name) {
    return client.v1().events().inNamespace("shop").withName(name).get();
  }

  @Test
  void controlCharactersOthersWroteAreEscapedAndALongMessageIsCutVisibly() {
    Event written = read(writer().create(service("web"), "Warning", "EndpointsRefused",
        "managed by 'evil\ntouch /tmp/x \u001b[8m' " + "x".repeat(2000)).name());
    assertThat(written.getMessage()).startsWith("managed by 'evil\\ntouch /tmp/x \\x1b[8m' ")
        .doesNotContain("\n", "\u001b").hasSize(EventWriter.MAX_MESSAGE).endsWith("...");
    assertThat(written.getReason()).isEqualTo("EndpointsRefused");
    assertThat(written.getType()).isEqualTo("Warning");
    assertThat(written.getCount()).isEqualTo(1);
    assertThat(written.getReportingComponent()).isEqualTo("egress-service-agent");
    assertThat(written.getReportingInstance()).isEqualTo("node-a");
    assertThat(written.getSource().getHost()).isEqualTo("node-a");
    assertThat(written.getMetadata().getLabels()).containsEntry("egress-service-agent/node", "node-a");
    assertThat(written.getInvolvedObject()).isEqualTo(service("web"));
    assertThat(written.getFirstTimestamp()).isEqualTo(written.getLastTimestamp()).isEqualTo("2026-12-08T00:00:00Z");
  }

  @Test
  void anObjectWithTheLongestNameStillGetsAnEventNameTheApiTakes() {
    String longest = "w".repeat(199) + "-" + "w".repeat(53);
    EventWriter.Created created = writer().create(service(longest), "Normal", "EgressConfigured", "ok");
    assertThat(created.name()).hasSizeLessThanOrEqualTo(253)
        .matches("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    assertThat(read(created.name()).getInvolvedObject().getName()).isEqualTo(longest);
  }

  @Test
  void twoEventsAtOnceOnOneObjectAreTwoEvents() {
    EventWriter writer = writer();
    String first = writer.create(service("web"), "Normal", "EgressConfigured", "one").name();
    String second = writer.create(service("web"), "Normal", "EgressConfigured", "two").name();
    assertThat(first).isNotEqualTo(second);
  }

  @Test
  void aRepeatRaisesTheCountOfTheEventWrittenBeforeAndAGoneOneIsSaidToBeGone() {
    EventWriter writer = writer();
    String name = writer.create(service("web"), "Normal", "EgressConfigured", "1 endpoint").name();
    assertThat(writer.repeat("shop", name, 2, "2 endpoints\n")).isTrue();
    Event repeated = read(name);
    assertThat(repeated.getCount()).isEqualTo(2);
    assertThat(repeated.getMessage()).isEqualTo("2 endpoints\\n");
    assertThat(writer.repeat("shop", "gone.123", 2, "again")).isFalse();
  }
}

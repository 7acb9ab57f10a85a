package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Clock;
import java.time.Duration;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** The Events that tell an admin a process's view of the API went stale and caught up, against the mock API. */
@EnableKubernetesMockClient(crud = true)
class StaleViewEventsTest {
  static final long SECOND = TimeUnit.SECONDS.toNanos(1);
  static final Clock CLOCK = Clock.fixed(Instant.parse("2026-12-07T18:00:00Z"), ZoneOffset.UTC);
  static final StaleViewEvents.Target NODE_A = StaleViewEvents.Target.node("node-a", "egress-service-agent",
      () -> java.util.Optional.of("uid-a"));

  KubernetesClient client;
  final AtomicReference<Map<String, Double>> down = new AtomicReference<>(Map.of());

  StaleViewEvents events(StaleViewEvents.Target target, AtomicBoolean telling, Duration spacing) {
    return new StaleViewEvents(client, down::get, target, telling::get, spacing, CLOCK);
  }

  List<Event> events(String namespace) {
    return client.v1().events().inNamespace(namespace).list().getItems();
  }

  @Test
  void aWatchDownPastTheBoundIsToldOnTheNodeAndSoIsItsReturnWithHowLongItWasStale() {
    StaleViewEvents tell = events(NODE_A,
        new AtomicBoolean(true), StaleViewEvents.DEFAULT_SPACING);
    long t = 1_000 * SECOND;
    tell.poll(t);
    assertThat(events("default")).isEmpty();

    down.set(Map.of("EndpointSlice", 31.0, "Service", 30.5));
    tell.poll(t + SECOND);
    tell.poll(t + 2 * SECOND);

    assertThat(events("default")).singleElement().satisfies(e -> {
      assertThat(e.getType()).isEqualTo("Warning");
      assertThat(e.getReason()).isEqualTo(StaleViewEvents.STALE);
      assertThat(e.getInvolvedObject().getKind()).isEqualTo("Node");
      assertThat(e.getInvolvedObject().getName()).isEqualTo("node-a");
      assertThat(e.getInvolvedObject().getUid()).isEqualTo("uid-a");
      assertThat(e.getReportingInstance()).isEqualTo("node-a");
      assertThat(e.getMessage()).contains("no watch of EndpointSlice, Service since 2026-12-07T17:59:29Z (31 s)");
    });

    down.set(Map.of());
    tell.poll(t + 60 * SECOND);

    assertThat(events("default")).filteredOn(e -> StaleViewEvents.CAUGHT_UP.equals(e.getReason())).singleElement()
        .satisfies(e -> {
          assertThat(e.getType()).isEqualTo("Normal");
          assertThat(e.getInvolvedObject().getName()).isEqualTo("node-a");
          assertThat(e.getMessage()).contains("every watch is up again after 90 s stale");
        });
  }

  @Test
  void aFlappingWatchIsToldOncePerSpacingAndAnUntoldEpisodeEndsSilently() {
    StaleViewEvents tell = events(NODE_A,
        new AtomicBoolean(true), Duration.ofMinutes(5));
    long t = 1_000 * SECOND;
    for (int i = 0; i < 6; i++) {
      down.set(Map.of("Node", 30.0));
      tell.poll(t + i * 20 * SECOND);
      down.set(Map.of());
      tell.poll(t + i * 20 * SECOND + 10 * SECOND);
    }
    assertThat(events("default")).extracting(Event::getReason)
        .containsExactlyInAnyOrder(StaleViewEvents.STALE, StaleViewEvents.CAUGHT_UP);

    down.set(Map.of("Node", 30.0));
    tell.poll(t + 6 * 60 * SECOND);
    assertThat(events("default")).filteredOn(e -> StaleViewEvents.STALE.equals(e.getReason())).hasSize(2);
  }

  @Test
  void eventsTheApiCouldNotTakeAreWrittenOnceItAnswersAgain() throws Exception {
    io.fabric8.kubernetes.client.server.mock.KubernetesMockServer first = ApiConnectivityTest.server(0);
    int port = first.getPort();
    KubernetesClient cutOff = new io.fabric8.kubernetes.client.KubernetesClientBuilder().withConfig(
        new io.fabric8.kubernetes.client.ConfigBuilder(first.createClient().getConfiguration())
            .withRequestRetryBackoffLimit(0).withRequestTimeout(1000).withConnectionTimeout(1000).build()).build();
    io.fabric8.kubernetes.client.server.mock.KubernetesMockServer restored = null;
    try {
      StaleViewEvents tell = new StaleViewEvents(cutOff, down::get,
          NODE_A, () -> true, StaleViewEvents.DEFAULT_SPACING, CLOCK);
      first.destroy();
      long t = 1_000 * SECOND;
      down.set(Map.of("Node", 30.0));
      tell.poll(t);
      tell.poll(t + SECOND);

      restored = ApiConnectivityTest.server(port);
      down.set(Map.of());
      tell.poll(t + 20 * SECOND);

      assertThat(cutOff.v1().events().inNamespace("default").list().getItems())
          .extracting(Event::getReason).containsExactlyInAnyOrder(StaleViewEvents.STALE, StaleViewEvents.CAUGHT_UP);
    } finally {
      cutOff.close();
      if (restored != null) {
        restored.destroy();
      }
    }
  }

  @Test
  void theAllocatorTellsOnItsLeaseOnlyWhileLeading() {
    AtomicBoolean leading = new AtomicBoolean(false);
    StaleViewEvents tell = events(StaleViewEvents.Target.lease("egress-service-agent", "egress-service-allocator",
        "egress-service-allocator", "allocator-0",
        java.util.Optional::empty), leading, StaleViewEvents.DEFAULT_SPACING);
    long t = 1_000 * SECOND;
    down.set(Map.of("EgressService", 40.0));
    tell.poll(t);
    down.set(Map.of());
    tell.poll(t + SECOND);
    assertThat(events("egress-service-agent")).isEmpty();

    leading.set(true);
    down.set(Map.of("EgressService", 30.0));
    tell.poll(t + 2 * SECOND);
    down.set(Map.of());
    tell.poll(t + 3 * SECOND);

    assertThat(events("egress-service-agent")).extracting(Event::getReason)
        .containsExactlyInAnyOrder(StaleViewEvents.STALE, StaleViewEvents.CAUGHT_UP);
    assertThat(events("egress-service-agent")).allSatisfy(e -> {
      assertThat(e.getInvolvedObject().getKind()).isEqualTo("Lease");
      assertThat(e.getInvolvedObject().getName()).isEqualTo("egress-service-allocator");
      assertThat(e.getReportingInstance()).isEqualTo("allocator-0");
    });
  }
}

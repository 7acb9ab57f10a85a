package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.ServiceOutcome;
import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/**
 * A cold start with 5,000 services reports 5,000 outcomes at once. Their Events are queued and written
 * at the recorder's pace: reporting never waits for the API server (not even one that hangs), and what reaches it
 * is rate-limited (a burst, then a steady rate).
 */
class ColdStartEventsTest {
  static final int SERVICES = 5000;

  private static DesiredState coldStart(String reason) {
    List<ServiceOutcome> outcomes = new ArrayList<>();
    for (int i = 0; i < SERVICES; i++) {
      outcomes.add(new ServiceOutcome(new ObjectRef("ns", "svc-" + i), true, reason, List.of(), List.of()));
    }
    return DesiredState.builder().node("node-a").priority(PlanConfig.DEFAULT_PRIORITY)
        .ruleProtocol(PlanConfig.DEFAULT_RULE_PROTOCOL)
        .services(outcomes).build();
  }

  @Test
  void fiveThousandOutcomesAtAColdStartAreQueuedAndWrittenAtTheRateLimitNeverInTheReconcile() {
    CountDownLatch apiServerBack = new CountDownLatch(1);
    AtomicInteger writes = new AtomicInteger();
    EventSink hangingApiServer = (es, type, reason, message) -> {
      writes.incrementAndGet();
      try {
        apiServerBack.await(60, TimeUnit.SECONDS);
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    };
    EventLimits limits = EventLimits.defaults();
    EventRecorder recorder = new EventRecorder(hangingApiServer, new AgentMetrics(), limits, Clock.systemUTC(),
        "events-incplan-test");
    OutcomeReporter reporter = new OutcomeReporter(recorder, "node-a");
    recorder.start(reporter::seeded);
    try {
      // The reconcile thread's part: however the API server behaves, reporting returns at once.
      assertTimeoutPreemptively(Duration.ofSeconds(5), () -> reporter.report(coldStart("SNAT of 1 endpoint(s)")));
      await().atMost(Duration.ofSeconds(10)).until(() -> writes.get() == 1);
      assertTimeoutPreemptively(Duration.ofSeconds(5), () -> {
        reporter.report(coldStart("SNAT of 2 endpoint(s)"));
        reporter.reportChanged(coldStart("x"), Set.of(new ObjectRef("ns", "svc-1")), java.util.Map.of());
      });
      assertThat(writes.get()).as("one write hangs; nothing else was written meanwhile").isEqualTo(1);

      apiServerBack.countDown();
      long start = System.nanoTime();
      await().atMost(Duration.ofSeconds(20)).until(() -> writes.get() >= limits.burst());
      // After the burst, the steady rate: about one per refill interval, far from the 5,000 waiting.
      await().during(Duration.ofSeconds(1)).atMost(Duration.ofSeconds(3)).until(() -> writes.get()
          <= limits.burst() + 2 + (System.nanoTime() - start) / limits.refill().toNanos());
      assertThat(writes.get()).isLessThan(SERVICES / 10);
    } finally {
      apiServerBack.countDown();
      recorder.close();
    }
  }
}

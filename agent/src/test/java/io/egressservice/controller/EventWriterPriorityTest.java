package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.lifecycle.LowPriority;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.plan.ObjectRef;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** Events are written at a lower CPU priority than the reconciles that report them. */
class EventWriterPriorityTest {
  @Test
  void eventsAreWrittenByALowerPriorityThreadThanTheReporters() {
    List<OptionalInt> writerNice = new CopyOnWriteArrayList<>();
    EventSink sink = (es, type, reason, message) -> writerNice.add(LowPriority.currentNice());
    EventRecorder recorder = new EventRecorder(sink, new AgentMetrics(), EventLimits.defaults(), Clock.systemUTC(),
        "events-priority-test");
    recorder.start(seed -> {});
    try {
      recorder.record(OutcomeReporter.Channel.values()[0],
          new EventRecord(new ObjectRef("ns", "svc"), "Normal", "EgressConfigured", "ok"));
      await().atMost(Duration.ofSeconds(10)).until(() -> !writerNice.isEmpty());
      assertThat(writerNice.get(0)).as("the writer's nice value").hasValue(LowPriority.BACKGROUND);
      assertThat(LowPriority.currentNice()).as("the reporting (reconcile) thread keeps its priority").hasValue(0);
    } finally {
      recorder.close();
    }
  }
}

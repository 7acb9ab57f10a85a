package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.lifecycle.LowPriority;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.model.ObjectRef;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.OptionalInt;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/** Events are written at a lower CPU priority than the reconciles that report them. */
class EventWriterPriorityTest {
  /** The nice value of the thread that writes the Event a recorder started on this thread is given. */
  private static OptionalInt writersNice() {
    List<OptionalInt> writerNice = new CopyOnWriteArrayList<>();
    EventSink sink = (es, type, reason, message) -> writerNice.add(LowPriority.currentNice());
    EventRecorder recorder = new EventRecorder(sink, new AgentMetrics(), EventLimits.defaults(), Clock.systemUTC(),
        "events-priority-test");
    recorder.start(seed -> {});
    try {
      recorder.record(OutcomeReporter.Channel.values()[0],
          new EventRecord(new ObjectRef("ns", "svc"), "Normal", "EgressConfigured", "ok"));
      await().atMost(Duration.ofSeconds(10)).until(() -> !writerNice.isEmpty());
      return writerNice.get(0);
    } finally {
      recorder.close();
    }
  }

  @Test
  void eventsAreWrittenByALowerPriorityThreadThanTheReporters() {
    int reporter = LowPriority.currentNice().orElseThrow();

    OptionalInt writer = writersNice();

    assertThat(writer).as("the writer's nice value").hasValue(Math.min(19, reporter + LowPriority.BACKGROUND));
    assertThat(LowPriority.currentNice()).as("the reporting (reconcile) thread keeps its priority").hasValue(reporter);
  }

  @Test
  void inAProcessAlreadyNicedTheWriterStillRunsBelowTheReporters() throws Exception {
    AtomicReference<OptionalInt> reporter = new AtomicReference<>();
    AtomicReference<OptionalInt> writer = new AtomicReference<>();
    // A thread of its own: raising one's nice value needs no privilege, lowering it again would.
    Thread niced = new Thread(() -> {
      assertThat(LowPriority.lowerCurrentThreadBy(5)).isTrue();
      reporter.set(LowPriority.currentNice());
      writer.set(writersNice());
    }, "niced-reporter");
    niced.start();
    niced.join(Duration.ofSeconds(20).toMillis());

    int at = reporter.get().orElseThrow();
    assertThat(at).isGreaterThanOrEqualTo(5);
    assertThat(writer.get()).as("ten steps below a reporter at nice " + at).hasValue(Math.min(19, at + 10));
  }
}

package io.egressservice.lifecycle;

import java.time.Clock;
import java.time.Instant;
import java.time.ZoneId;
import java.util.Optional;

/**
 * Test only: faults the real process can be told to inject, so that a test sees what the process does when one of
 * its threads fails. Never set in a pod (the manifests do not, and nothing else reads the property).
 *
 * <p>{@code -Degress-service-agent.test.fault=oom-in-thread:<prefix>}: the clock the node agent is given throws an
 * {@link OutOfMemoryError} when a thread whose name starts with {@code <prefix>} reads it (the reconcile worker,
 * {@code reconcile-<node>}, reads it once per reconcile), as if that thread had run out of heap.
 */
public final class TestFaults {
  public static final String PROPERTY = "egress-service-agent.test.fault";
  private static final String OOM_IN_THREAD = "oom-in-thread:";

  private TestFaults() {}

  /** {@code clock}, or the faulty one the system property asks for. */
  public static Clock clock(Clock clock) {
    return clock(clock, Optional.ofNullable(System.getProperty(PROPERTY)));
  }

  static Clock clock(Clock clock, Optional<String> fault) {
    if (fault.isEmpty()) {
      return clock;
    }
    if (!fault.get().startsWith(OOM_IN_THREAD) || fault.get().length() == OOM_IN_THREAD.length()) {
      throw new IllegalArgumentException(PROPERTY + "=" + fault.get() + ": the only fault is " + OOM_IN_THREAD + "<thread name prefix>");
    }
    return new OomInThread(clock, fault.get().substring(OOM_IN_THREAD.length()));
  }

  private static final class OomInThread extends Clock {
    private final Clock clock;
    private final String threadPrefix;

    OomInThread(Clock clock, String threadPrefix) {
      this.clock = clock;
      this.threadPrefix = threadPrefix;
    }

    private void maybeFail() {
      if (Thread.currentThread().getName().startsWith(threadPrefix)) {
        throw new OutOfMemoryError("Java heap space (injected by -D" + PROPERTY + ", a test)");
      }
    }

    @Override
    public ZoneId getZone() {
      return clock.getZone();
    }

    @Override
    public Clock withZone(ZoneId zone) {
      return new OomInThread(clock.withZone(zone), threadPrefix);
    }

    @Override
    public Instant instant() {
      maybeFail();
      return clock.instant();
    }

    @Override
    public long millis() {
      maybeFail();
      return clock.millis();
    }
  }
}

package io.egressservice.explain;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalDouble;
import java.util.TreeMap;

/**
 * How old the running agent's view of the API is, as the agent says on its own metrics port: what {@code status}
 * and {@code explain} show beside the kernel, because the kernel holds what the agent last applied from that view.
 */
public sealed interface AgentView permits AgentView.Answered, AgentView.Unknown {
  /** Where the agent was asked (its metrics URL). */
  String source();

  /** Nobody answered at {@link #source()} (or the answer was not the agent's metrics): the view's age is unknown. */
  record Unknown(String source, String why) implements AgentView {
    public Unknown {
      Objects.requireNonNull(source);
      Objects.requireNonNull(why);
    }
  }

  /**
   * The agent's figures at the moment it was asked.
   *
   * @param ready whether {@code /readyz} answered 200; {@code readiness} is its one-line answer
   * @param watches per API kind, whether its watch is up and seconds since it was last seen established
   * @param idleSeconds per watched resource (API path), seconds since its watch last received a frame
   * @param freshKernelCheckAgeSeconds seconds since the kernel was last checked and repaired from objects read
   *     while every watch was up; empty when it never was since the agent started
   * @param pendingTriggers reconcile triggers waiting; {@code pendingOldestSeconds} how long the oldest has waited
   */
  record Answered(String source, boolean ready, String readiness, List<Watch> watches, Map<String, Double> idleSeconds,
      OptionalDouble freshKernelCheckAgeSeconds, long pendingTriggers, double pendingOldestSeconds)
      implements AgentView {
    public Answered {
      Objects.requireNonNull(source);
      Objects.requireNonNull(readiness);
      watches = List.copyOf(watches);
      idleSeconds = java.util.Collections.unmodifiableMap(new TreeMap<>(idleSeconds));
      Objects.requireNonNull(freshKernelCheckAgeSeconds);
    }

    /**
     * The view's age: the longest any watch went without a frame or without being established. A healthy watch
     * receives a bookmark at least every minute or so, and one silent for {@code --api-watch-idle-timeout} is
     * re-opened, so a figure well past that says the view is stale.
     */
    public double ageSeconds() {
      double age = 0;
      for (Watch w : watches) {
        age = Math.max(age, w.lastContactAgeSeconds());
      }
      for (double idle : idleSeconds.values()) {
        age = Math.max(age, idle);
      }
      return age;
    }

    public long watchesUp() {
      return watches.stream().filter(Watch::up).count();
    }
  }

  /** One API kind's watch. */
  record Watch(String kind, boolean up, double lastContactAgeSeconds) {
    public Watch {
      Objects.requireNonNull(kind);
    }
  }
}

package io.egressservice.allocator;

import java.time.Duration;
import java.util.Objects;

/**
 * Timings of planned host moves ({@link PlannedMoves}); by default the new host has 10 s to report that it receives
 * a service, and the old host keeps receiving for 5 s after {@code status.host} moved.
 *
 * @param readyBound how long a planned move waits for the new host to report that it receives the service
 * @param drain how long the old host keeps receiving after {@code status.host} moved: the steering nodes' agents
 *     must see the new status and apply it within it (a reconcile takes milliseconds; the API's watch delay and a
 *     busy agent's pacing make it up to about a second)
 * @param poll how often the new hosts' {@code /hosting} is read while a move waits
 */
public record PlannedMoveSettings(Duration readyBound, Duration drain, Duration poll) {
  public PlannedMoveSettings {
    Objects.requireNonNull(readyBound);
    Objects.requireNonNull(drain);
    if (poll.isNegative() || poll.isZero()) {
      throw new IllegalArgumentException("the /hosting poll interval must be positive");
    }
  }

  public static PlannedMoveSettings defaults() {
    return new PlannedMoveSettings(Duration.ofSeconds(10), Duration.ofSeconds(5), Duration.ofMillis(100));
  }
}

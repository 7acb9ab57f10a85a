package io.egressservice.bench;

import io.egressservice.cluster.FailoverScenario;
import java.time.Duration;

/** The step the power-off rows end each run with: the old host powered on again, and its own pod's flow awaited. */
final class PowerOn {
  /** How long the powered-on node's own pod's flow may take to reach the external host again. */
  static final Duration BACK_LIMIT = Duration.ofSeconds(10);

  private PowerOn() {}

  /**
   * Powers {@code oldHost} on; whether its own pod's flow reaches the external host through the current host within
   * {@link #BACK_LIMIT} (if not, says so as run {@code run} of {@code row}: the flow is replaced by a new one).
   */
  static boolean againAndFlowBack(FailoverScenario s, String row, int run, String oldHost) {
    s.powerOn(oldHost);
    if (s.awaitStreamsBack(oldHost, BACK_LIMIT)) {
      return true;
    }
    System.out.printf("%s %d: powered on again, %s's own pod's flow does not reach the external host via %s "
        + "within %d s: replaced by a new flow%n", row, run, oldHost, s.host(), BACK_LIMIT.toSeconds());
    return false;
  }
}

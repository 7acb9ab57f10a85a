package io.egressservice.bench;

import io.egressservice.cluster.FailoverScenario;
import java.util.ArrayList;
import java.util.List;

/** The sequence of status.host values seen while polling: the moves are its length minus one. */
final class HostSequence {
  private final FailoverScenario scenario;
  private final List<String> seen = new ArrayList<>();

  HostSequence(FailoverScenario scenario) {
    this.scenario = scenario;
    poll();
  }

  void poll() {
    String h = scenario.host();
    if (seen.isEmpty() || !seen.get(seen.size() - 1).equals(h)) {
      seen.add(h);
    }
  }

  /** Polls every {@code everyMs} for {@code ms}. */
  void pollFor(long ms, long everyMs) {
    long end = System.nanoTime() + ms * 1_000_000;
    while (System.nanoTime() < end) {
      poll();
      Pause.ms(everyMs);
    }
  }

  /** Changes of status.host (an empty host counts as a value: a drain is a move). */
  int moves() {
    return seen.size() - 1;
  }

  List<String> seen() {
    return List.copyOf(seen);
  }
}

package io.egressservice.bench;

import java.util.Optional;

/**
 * One row of the failover bench: what was measured, the goal, whether it was met, and why the row stopped early if
 * it did (the figures then cover the runs completed before).
 */
record RowResult(String row, String figures, String goal, boolean met, Optional<String> stopped) {
  String line() {
    return String.format("%-9s %s | goal: %s | %s%s", row, figures, goal, met && stopped.isEmpty() ? "met" : "NOT met",
        stopped.map(s -> " | stopped early: " + s).orElse(""));
  }

  static RowResult failed(String row, String goal, Throwable e) {
    return new RowResult(row, "no figures", goal, false, Optional.of(String.valueOf(e)));
  }
}

package io.egressservice.bench;

import java.util.Optional;

/**
 * What the rows that must not disturb the service (stall, probe loss) count over their runs: host moves, datagrams
 * lost, datagrams seen outside with another source, and the runs completed.
 */
final class Disruptions {
  static final String GOAL = "0 moves (and 0 lost, 0 leaked)";

  int moves;
  long lost;
  long leaked;
  int done;

  /** Adds one run's figures. */
  void count(int runMoves, long runLost, long runLeaked) {
    moves += runMoves;
    lost += runLost;
    leaked += runLeaked;
  }

  /** Run {@code run} is complete. */
  void completed(int run) {
    done = run;
  }

  /** The row's result: {@code figures}, met when at least one run completed and none moved, lost or leaked. */
  RowResult result(String row, String figures, Optional<String> stopped) {
    return new RowResult(row, figures, GOAL, done > 0 && moves == 0 && lost == 0 && leaked == 0, stopped);
  }
}

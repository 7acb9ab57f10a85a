package io.egressservice.dataplane;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Reference counts of addresses that several services may hold at once (an LB IP, a source), as the no-host and the
 * guard tables' inputs keep them: an address is in the kernel's set while its count is above zero.
 */
final class SourceCounts {
  private SourceCounts() {}

  /**
   * Moves the count of {@code p} by {@code sign}; an address that appears goes to {@code added}, one that goes to
   * {@code removed} (both null when no delta is wanted).
   */
  static <T> void count(Map<T, Integer> counts, T p, int sign, List<T> added, List<T> removed) {
    int n = counts.getOrDefault(p, 0) + sign;
    if (n <= 0) {
      counts.remove(p);
      if (removed != null) {
        removed.add(p);
      }
    } else {
      counts.put(p, n);
      if (n == 1 && sign > 0 && added != null) {
        added.add(p);
      }
    }
  }

  /** Drops what a delta both added and removed (a service's address replaced by the same one). */
  static <T> void cancel(List<T> added, List<T> removed) {
    List<T> both = new ArrayList<>(added);
    both.retainAll(removed);
    added.removeAll(both);
    removed.removeAll(both);
  }
}

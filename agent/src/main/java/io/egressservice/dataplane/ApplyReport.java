package io.egressservice.dataplane;

import java.util.List;

/**
 * What a reconcile did.
 *
 * @param applied the changes that took effect, in order
 * @param failures changes the kernel refused, each with why; the rest were still applied, and the
 *     kernel holds, for every object, either its old or its new state (the next reconcile retries)
 * @param kernelNanos time spent in netlink and libnftables calls, observation included
 */
public record ApplyReport(List<Change> applied, List<String> failures, long kernelNanos) {
  public ApplyReport {
    applied = List.copyOf(applied);
    failures = List.copyOf(failures);
  }

  public boolean succeeded() {
    return failures.isEmpty();
  }
}

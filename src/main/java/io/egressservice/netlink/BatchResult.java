package io.egressservice.netlink;

import java.util.List;

/**
 * The outcome of {@link RtNetlink#apply}: each change is in exactly one of the lists, in the order
 * given. A failure carries the typed error of that one request.
 */
public record BatchResult(List<RuleChange> succeeded, List<Failure> failed) {
  public BatchResult {
    succeeded = List.copyOf(succeeded);
    failed = List.copyOf(failed);
  }

  public record Failure(RuleChange change, NetlinkException error) {}

  public boolean allSucceeded() {
    return failed.isEmpty();
  }
}

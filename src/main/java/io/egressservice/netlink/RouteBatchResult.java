package io.egressservice.netlink;

import java.util.List;

/**
 * The outcome of {@link RtNetlink#applyRoutes}: each change is in exactly one of the lists, in the
 * order given. A failure carries the typed error of that one request.
 */
public record RouteBatchResult(List<RouteChange> succeeded, List<Failure> failed) {
  public RouteBatchResult {
    succeeded = List.copyOf(succeeded);
    failed = List.copyOf(failed);
  }

  public record Failure(RouteChange change, NetlinkException error) {}

  public boolean allSucceeded() {
    return failed.isEmpty();
  }
}

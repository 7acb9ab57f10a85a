package io.egressservice.netlink;

import java.util.List;

/**
 * The outcome of {@link RtNetlink#apply} (rule changes) or {@link RtNetlink#applyRoutes} (route changes): each
 * change is in exactly one of the lists, in the order given. A failure carries the typed error of that one
 * request.
 *
 * @param <C> {@link RuleChange} or {@link RouteChange}
 */
public record BatchResult<C>(List<C> succeeded, List<Failure<C>> failed) {
  public BatchResult {
    succeeded = List.copyOf(succeeded);
    failed = List.copyOf(failed);
  }

  public record Failure<C>(C change, NetlinkException error) {}

  public boolean allSucceeded() {
    return failed.isEmpty();
  }
}

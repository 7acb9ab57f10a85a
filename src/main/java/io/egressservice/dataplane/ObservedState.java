package io.egressservice.dataplane;

import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.NftState;
import io.egressservice.nft.MarkNftables.MarkState;
import java.util.List;

/**
 * What the agent owns in one network namespace right now: ip rules at P and P-1 carrying our
 * protocol (both families), and the {@code inet egress_service_agent} table (SNAT objects and, in
 * mark mode, the mark objects).
 */
public record ObservedState(List<Rule> rules, NftState nft, MarkState marks, ReversePath.State reversePath) {
  public ObservedState {
    rules = List.copyOf(rules);
  }

  /** Without the reverse-path facts (they matter only in mark mode). */
  public ObservedState(List<Rule> rules, NftState nft, MarkState marks) {
    this(rules, nft, marks, ReversePath.State.NONE);
  }

  ObservedState withReversePath(ReversePath.State state) {
    return new ObservedState(rules, nft, marks, state);
  }
}

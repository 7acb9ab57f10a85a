package io.egressservice.dataplane;

import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.NftState;
import java.util.List;

/**
 * What the agent owns in one network namespace right now: ip rules at P and P-1 carrying our
 * protocol (both families), and the {@code inet egress_service_agent} table.
 */
public record ObservedState(List<Rule> rules, NftState nft) {
  public ObservedState {
    rules = List.copyOf(rules);
  }
}

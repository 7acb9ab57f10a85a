package io.egressservice.dataplane;

import io.egressservice.netlink.Route;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.NftState;
import io.egressservice.nft.MarkNftables.MarkState;
import java.util.List;

/**
 * What the agent owns in one network namespace right now: ip rules at P and P-1 carrying our
 * protocol (both families), {@code throw} routes carrying our protocol in any table, and the {@code
 * inet egress_service_agent} table (SNAT objects and, in mark mode, the mark objects), and the steering
 * device with its routes.
 */
public record ObservedState(List<Rule> rules, List<Route> routes, NftState nft, MarkState marks,
    ReversePath.State reversePath, SteeringState steering) {
  public ObservedState {
    rules = List.copyOf(rules);
    routes = List.copyOf(routes);
  }

  /** Without the reverse-path facts (they matter only in mark mode). */
  public ObservedState(List<Rule> rules, List<Route> routes, NftState nft, MarkState marks) {
    this(rules, routes, nft, marks, ReversePath.State.NONE, SteeringState.absent());
  }

  /** Without routes (a namespace where the agent owns none) and reverse-path facts. */
  public ObservedState(List<Rule> rules, NftState nft, MarkState marks) {
    this(rules, List.of(), nft, marks);
  }

  ObservedState withReversePath(ReversePath.State state) {
    return new ObservedState(rules, routes, nft, marks, state, steering);
  }
}

package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Optional;

/**
 * One grant of the EgressServicePolicy: the namespaces it is for, the networks they may name, and (optionally) the
 * ranges their LoadBalancer IPs must lie in.
 *
 * @param networks the {@code spec.network} values allowed, exactly as written; an EgressService without a network
 *     is allowed by every grant that selects its namespace
 * @param loadBalancerIpRanges empty: any LoadBalancer IP; else each LB IP must lie in one of them
 */
public record Grant(LabelMatcher namespaceSelector, List<String> networks,
    Optional<List<IpPrefix>> loadBalancerIpRanges) {
  public Grant {
    networks = List.copyOf(networks);
    loadBalancerIpRanges = loadBalancerIpRanges.map(List::copyOf);
  }

  boolean allowsNetwork(String network) {
    return network.isEmpty() || networks.contains(network);
  }

  /** Whether every one of {@code lbIps} lies in a range of this grant (always, without ranges). */
  boolean allowsLoadBalancerIps(List<IpPrefix> lbIps) {
    if (loadBalancerIpRanges.isEmpty()) {
      return true;
    }
    return lbIps.stream().allMatch(ip -> Cidrs.anyContains(loadBalancerIpRanges.get(), ip));
  }
}

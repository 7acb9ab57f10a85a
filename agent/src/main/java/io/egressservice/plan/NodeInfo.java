package io.egressservice.plan;

import java.util.List;

/**
 * What the plan needs of a Node.
 *
 * @param addresses {@code status.addresses} of type InternalIP and ExternalIP, raw text
 * @param podCidrs {@code spec.podCIDRs} (else {@code spec.podCIDR}), raw text
 * @param internalIps {@code status.addresses} of type InternalIP alone, raw text, in order: where other
 *     nodes steer the endpoints of services this node hosts (the first of each family)
 */
public record NodeInfo(String name, List<String> addresses, List<String> podCidrs, List<String> internalIps) {
  public NodeInfo {
    addresses = List.copyOf(addresses);
    podCidrs = List.copyOf(podCidrs);
    internalIps = List.copyOf(internalIps);
  }

  /** A Node whose InternalIPs are not known apart from its other addresses (none to steer to). */
  public NodeInfo(String name, List<String> addresses, List<String> podCidrs) {
    this(name, addresses, podCidrs, List.of());
  }
}

package io.egressservice.plan;

import java.util.List;

/**
 * What the plan needs of a Node.
 *
 * @param addresses {@code status.addresses} of type InternalIP and ExternalIP, raw text
 * @param podCidrs {@code spec.podCIDRs} (else {@code spec.podCIDR}), raw text
 */
public record NodeInfo(String name, List<String> addresses, List<String> podCidrs) {
  public NodeInfo {
    addresses = List.copyOf(addresses);
    podCidrs = List.copyOf(podCidrs);
  }
}

package io.egressservice.plan;

import java.util.List;
import java.util.Optional;

/**
 * What the plan needs of an EndpointSlice.
 *
 * @param ref the slice's own namespace/name
 * @param serviceName its {@code kubernetes.io/service-name} label, "" when absent
 * @param addressType "IPv4", "IPv6" or "FQDN"
 */
public record EndpointSliceInfo(ObjectRef ref, String serviceName, String addressType, List<Endpoint> endpoints) {
  public EndpointSliceInfo {
    serviceName = serviceName == null ? "" : serviceName;
    addressType = addressType == null ? "" : addressType;
    endpoints = List.copyOf(endpoints);
  }

  /**
   * One endpoint. Readiness is deliberately absent: starting, not-ready and terminating pods still send
   * egress traffic, which must keep the service's identity.
   */
  public record Endpoint(List<String> addresses, Optional<String> nodeName) {
    public Endpoint {
      addresses = List.copyOf(addresses);
    }
  }
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;
import java.util.Objects;

/**
 * A local endpoint of a LoadBalancerIP service without a host, under {@code --no-host=drop}: its packets to
 * destinations outside the cluster are dropped (and counted for the service) until the service has a host.
 */
public record HeldEndpoint(ObjectRef service, IpPrefix source) {
  public static final Comparator<HeldEndpoint> ORDER =
      Comparator.comparing(HeldEndpoint::service).thenComparing(HeldEndpoint::source);

  public HeldEndpoint {
    Objects.requireNonNull(service);
    Objects.requireNonNull(source);
  }
}

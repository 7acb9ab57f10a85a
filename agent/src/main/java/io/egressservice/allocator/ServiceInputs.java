package io.egressservice.allocator;

import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import java.util.List;
import java.util.Objects;
import java.util.Optional;

/**
 * Everything of one EgressService that its decision reads besides the nodes and the other services' load.
 *
 * @param service the Service of the same namespace and name, if any
 * @param slices the EndpointSlices labelled {@code kubernetes.io/service-name} = that name, in its namespace, all
 *     of them (trusted or not: {@link AllocationPass#decide} filters)
 */
public record ServiceInputs(EgressServiceState egressService, Optional<ServiceInfo> service,
    List<EndpointSliceInfo> slices) {
  public ServiceInputs {
    Objects.requireNonNull(egressService);
    Objects.requireNonNull(service);
    slices = List.copyOf(slices);
  }

  public ObjectRef ref() {
    return egressService.ref();
  }
}

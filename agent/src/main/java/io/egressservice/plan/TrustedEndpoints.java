package io.egressservice.plan;

import io.egressservice.model.EndpointTrust;
import io.egressservice.plan.EndpointSliceInfo.Endpoint;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/** Which slices and endpoints a Service's {@link EndpointTrust} takes (its rules are told there). */
public final class TrustedEndpoints {
  private TrustedEndpoints() {}

  /**
   * Why none of the slice's addresses is taken for the Service, or empty when the slice is trusted.
   *
   * @param service the Service the slice names (same namespace), if it exists
   */
  public static Optional<String> sliceProblem(EndpointTrust trust, EndpointSliceInfo slice, Optional<ServiceInfo> service) {
    String manager = slice.managedBy();
    // Checked first, even if an admin lists it: its label is only believable where that controller writes.
    if (EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER.equals(manager)) {
      if (service.map(ServiceInfo::hasSelector).orElse(false)) {
        return Optional.empty();
      }
      return Optional.of("EndpointSlice " + slice.ref() + " is labelled as the EndpointSlice controller's, but the"
          + " Service has no selector, so that controller wrote no slice for it: not trusted");
    }
    if (trust.extraManagers().contains(manager)) {
      return Optional.empty();
    }
    String who = manager.isEmpty()
        ? "has no " + EndpointSliceInfo.MANAGED_BY_LABEL + " label"
        : "is managed by '" + manager + "'";
    String mirrored = EndpointSliceInfo.MIRRORING_CONTROLLER.equals(manager)
        ? " (a copy of a hand-written Endpoints object)" : "";
    return Optional.of("EndpointSlice " + slice.ref() + " " + who + mirrored + ", not by Kubernetes' EndpointSlice"
        + " controller: not trusted (an admin can trust its manager with --trusted-endpoint-managers)");
  }

  /** Why one endpoint of a trusted slice is still refused, or empty. */
  public static Optional<String> endpointProblem(EndpointSliceInfo slice, Endpoint endpoint) {
    if (endpoint.targetRef().isEmpty()) {
      return Optional.empty();
    }
    EndpointSliceInfo.TargetRef ref = endpoint.targetRef().get();
    String namespace = slice.ref().namespace();
    if ("Pod".equals(ref.kind()) && !ref.namespace().isEmpty() && !ref.namespace().equals(namespace)) {
      return Optional.of("its targetRef is a Pod of namespace " + ref.namespace() + ", not of the Service's namespace "
          + namespace + " (listed by EndpointSlice " + slice.ref() + "): never taken");
    }
    return Optional.empty();
  }

  /** The slices with only their trusted endpoints: what the allocator counts when it chooses a host. */
  public static List<EndpointSliceInfo> trusted(EndpointTrust trust, List<EndpointSliceInfo> slices, Optional<ServiceInfo> service) {
    List<EndpointSliceInfo> out = new ArrayList<>(slices.size());
    for (EndpointSliceInfo slice : slices) {
      if (sliceProblem(trust, slice, service).isPresent()) {
        continue;
      }
      List<Endpoint> endpoints = slice.endpoints().stream().filter(e -> endpointProblem(slice, e).isEmpty()).toList();
      out.add(endpoints.size() == slice.endpoints().size() ? slice
          : new EndpointSliceInfo(slice.ref(), slice.serviceName(), slice.addressType(), slice.managedBy(), endpoints));
    }
    return out;
  }
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.EndpointTrust;
import java.util.List;
import java.util.Optional;

/**
 * What the plan needs of an EndpointSlice.
 *
 * @param ref the slice's own namespace/name
 * @param serviceName its {@code kubernetes.io/service-name} label, "" when absent
 * @param addressType "IPv4", "IPv6" or "FQDN"
 * @param managedBy its {@code endpointslice.kubernetes.io/managed-by} label, "" when absent: who wrote the
 *     addresses, which decides whether they are trusted ({@link EndpointTrust})
 */
public record EndpointSliceInfo(
    ObjectRef ref, String serviceName, String addressType, String managedBy, List<Endpoint> endpoints) {
  public static final String MANAGED_BY_LABEL = "endpointslice.kubernetes.io/managed-by";
  /** Kubernetes' EndpointSlice controller: slices of Services with a selector, from the selected Pods. */
  public static final String ENDPOINTSLICE_CONTROLLER = "endpointslice-controller.k8s.io";
  /** Kubernetes' Endpoints mirroring controller: copies of hand-written Endpoints of selector-less Services. */
  public static final String MIRRORING_CONTROLLER = "endpointslicemirroring-controller.k8s.io";

  public EndpointSliceInfo {
    serviceName = serviceName == null ? "" : serviceName;
    addressType = addressType == null ? "" : addressType;
    managedBy = managedBy == null ? "" : managedBy;
    endpoints = List.copyOf(endpoints);
  }

  /** A slice as Kubernetes' EndpointSlice controller writes it (what a Service with a selector gets). */
  public EndpointSliceInfo(ObjectRef ref, String serviceName, String addressType, List<Endpoint> endpoints) {
    this(ref, serviceName, addressType, ENDPOINTSLICE_CONTROLLER, endpoints);
  }

  /**
   * One endpoint. Readiness is deliberately absent: starting, not-ready and terminating pods still send
   * egress traffic, which must keep the service's identity.
   *
   * @param targetRef {@code targetRef} kind and namespace, when the endpoint names a Pod of another namespace than
   *     the slice's (the one kind of targetRef that {@link EndpointTrust} refuses; the usual ones, a Pod of the
   *     Service's namespace, are not carried)
   */
  public record Endpoint(List<String> addresses, Optional<String> nodeName, Optional<TargetRef> targetRef) {
    public Endpoint {
      addresses = List.copyOf(addresses);
    }

    public Endpoint(List<String> addresses, Optional<String> nodeName) {
      this(addresses, nodeName, Optional.empty());
    }
  }

  /** {@code endpoints[].targetRef}: what the endpoint says it is ({@code kind} Pod, in {@code namespace}). */
  public record TargetRef(String kind, String namespace) {
    public TargetRef {
      kind = kind == null ? "" : kind;
      namespace = namespace == null ? "" : namespace;
    }
  }
}

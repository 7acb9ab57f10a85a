package io.egressservice.plan;

import io.egressservice.plan.EndpointSliceInfo.Endpoint;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Whose word the agent takes that an address is an endpoint of a Service. An endpoint makes its address
 * leave with the Service's LB IP and network, so a slice that lists another namespace's pod hijacks that
 * pod's egress; the agent takes addresses only from those who derive them from the Service's own Pods.
 *
 * <p>Trusted without configuration: slices of Kubernetes' EndpointSlice controller for a Service that has a
 * selector. The label alone proves nothing (anyone who may write EndpointSlices may write it), but for a
 * Service with a selector that controller owns every slice carrying its label: it deletes those the Service
 * does not own and rewrites the others from the selected Pods, all in the Service's namespace. For a
 * selector-less Service it writes nothing, so a slice carrying its label there is forged.
 *
 * <p>Not trusted without configuration, although Kubernetes runs it: the Endpoints mirroring controller. It
 * copies hand-written Endpoints objects of selector-less Services verbatim, so its slices say what whoever
 * may write Endpoints in the namespace wrote (clusters upgraded from before Kubernetes 1.22 still grant that
 * to every namespace editor). An admin who trusts those writers, or another manager (a load balancer's
 * controller that writes slices for selector-less Services), names them in {@code --trusted-endpoint-managers}.
 *
 * <p>In every trusted slice, an endpoint whose {@code targetRef} is a Pod of another namespace is refused:
 * the Service's own Pods are in its namespace.
 *
 * @param extraManagers {@code managed-by} values trusted in addition to the EndpointSlice controller
 */
public record EndpointTrust(Set<String> extraManagers) {
  public EndpointTrust {
    extraManagers = Set.copyOf(new TreeSet<>(extraManagers));
  }

  /** The default: the EndpointSlice controller (for Services with a selector) only. */
  public static EndpointTrust kubernetesOnly() {
    return new EndpointTrust(Set.of());
  }

  /**
   * Why none of the slice's addresses is taken for the Service, or empty when the slice is trusted.
   *
   * @param service the Service the slice names (same namespace), if it exists
   */
  public Optional<String> sliceProblem(EndpointSliceInfo slice, Optional<ServiceInfo> service) {
    String manager = slice.managedBy();
    // Checked first, even if an admin lists it: its label is only believable where that controller writes.
    if (EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER.equals(manager)) {
      if (service.map(ServiceInfo::hasSelector).orElse(false)) {
        return Optional.empty();
      }
      return Optional.of("EndpointSlice " + slice.ref() + " is labelled as the EndpointSlice controller's, but the"
          + " Service has no selector, so that controller wrote no slice for it: not trusted");
    }
    if (extraManagers.contains(manager)) {
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
  public Optional<String> endpointProblem(EndpointSliceInfo slice, Endpoint endpoint) {
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
  public List<EndpointSliceInfo> trusted(List<EndpointSliceInfo> slices, Optional<ServiceInfo> service) {
    List<EndpointSliceInfo> out = new ArrayList<>(slices.size());
    for (EndpointSliceInfo slice : slices) {
      if (sliceProblem(slice, service).isPresent()) {
        continue;
      }
      List<Endpoint> endpoints = slice.endpoints().stream().filter(e -> endpointProblem(slice, e).isEmpty()).toList();
      out.add(endpoints.size() == slice.endpoints().size() ? slice
          : new EndpointSliceInfo(slice.ref(), slice.serviceName(), slice.addressType(), slice.managedBy(), endpoints));
    }
    return out;
  }
}

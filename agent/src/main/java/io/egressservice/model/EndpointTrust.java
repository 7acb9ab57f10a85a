package io.egressservice.model;

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
}

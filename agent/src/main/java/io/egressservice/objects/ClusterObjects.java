package io.egressservice.objects;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.util.List;
import org.ovn.k8s.v1.EgressService;

/**
 * The Kubernetes objects the agent reads, as fabric8 models, from files or from informer caches, and what the grants
 * are read from ({@link GrantObjects}).
 */
public record ClusterObjects(
    List<EgressService> egressServices, List<Service> services, List<EndpointSlice> endpointSlices, List<Node> nodes,
    GrantObjects grants) {
  /** Without a policy. */
  public ClusterObjects(List<EgressService> egressServices, List<Service> services, List<EndpointSlice> endpointSlices,
      List<Node> nodes) {
    this(egressServices, services, endpointSlices, nodes, GrantObjects.none());
  }

  /** The same objects with other grant objects (the policy enforced by {@code --egress-service-policy}). */
  public ClusterObjects withGrants(GrantObjects g) {
    return new ClusterObjects(egressServices, services, endpointSlices, nodes, g);
  }

  public ClusterObjects {
    java.util.Objects.requireNonNull(grants, "grants");
    egressServices = List.copyOf(egressServices);
    services = List.copyOf(services);
    endpointSlices = List.copyOf(endpointSlices);
    nodes = List.copyOf(nodes);
  }
}

package io.egressservice.objects;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import java.util.List;
import org.ovn.k8s.v1.EgressService;

/** The Kubernetes objects the agent reads, as fabric8 models, from files or from informer caches. */
public record ClusterObjects(
    List<EgressService> egressServices, List<Service> services, List<EndpointSlice> endpointSlices, List<Node> nodes) {
  public ClusterObjects {
    egressServices = List.copyOf(egressServices);
    services = List.copyOf(services);
    endpointSlices = List.copyOf(endpointSlices);
    nodes = List.copyOf(nodes);
  }
}

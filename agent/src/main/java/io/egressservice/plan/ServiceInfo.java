package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.EndpointTrust;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

/**
 * What the plan needs of a Service.
 *
 * @param type {@code spec.type} ("ClusterIP" when unset)
 * @param clusterIps {@code spec.clusterIPs}, else {@code spec.clusterIP}; raw text ("None" for headless)
 * @param ingress {@code status.loadBalancer.ingress}, in order
 * @param externalTrafficPolicy {@code spec.externalTrafficPolicy} ("Cluster" when unset)
 * @param nodePorts {@code spec.ports[].nodePort}, those that are set (non-zero), in order
 * @param hasSelector whether {@code spec.selector} is non-empty: only then does Kubernetes' EndpointSlice
 *     controller write its slices ({@link EndpointTrust})
 * @param created {@code metadata.creationTimestamp}: of two Services of different namespaces with the same
 *     LB IP the older keeps it; empty sorts last
 */
public record ServiceInfo(ObjectRef ref, String type, List<String> clusterIps, List<Ingress> ingress,
    String externalTrafficPolicy, List<Integer> nodePorts, boolean hasSelector, Optional<Instant> created) {
  public static final String LOAD_BALANCER = "LoadBalancer";
  public static final String ETP_LOCAL = "Local";

  public ServiceInfo {
    type = type == null || type.isEmpty() ? "ClusterIP" : type;
    clusterIps = List.copyOf(clusterIps);
    ingress = List.copyOf(ingress);
    externalTrafficPolicy = externalTrafficPolicy == null || externalTrafficPolicy.isEmpty() ? "Cluster"
        : externalTrafficPolicy;
    nodePorts = List.copyOf(nodePorts);
  }

  /** A Service with a selector (what most are), of unknown age, the default external traffic policy, no node ports. */
  public ServiceInfo(ObjectRef ref, String type, List<String> clusterIps, List<Ingress> ingress) {
    this(ref, type, clusterIps, ingress, "", List.of());
  }

  /** A Service with a selector (what most are), of unknown age. */
  public ServiceInfo(ObjectRef ref, String type, List<String> clusterIps, List<Ingress> ingress,
      String externalTrafficPolicy, List<Integer> nodePorts) {
    this(ref, type, clusterIps, ingress, externalTrafficPolicy, nodePorts, true, Optional.empty());
  }

  /** The default external traffic policy, no node ports. */
  public ServiceInfo(ObjectRef ref, String type, List<String> clusterIps, List<Ingress> ingress, boolean hasSelector,
      Optional<Instant> created) {
    this(ref, type, clusterIps, ingress, "", List.of(), hasSelector, created);
  }

  /** One {@code status.loadBalancer.ingress} entry; either field may be "". */
  public record Ingress(String ip, String hostname) {
    public Ingress {
      ip = ip == null ? "" : ip.trim();
      hostname = hostname == null ? "" : hostname;
    }
  }
}

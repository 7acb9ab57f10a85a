package io.egressservice.plan;

import java.util.List;

/**
 * What the plan needs of a Service.
 *
 * @param type {@code spec.type} ("ClusterIP" when unset)
 * @param clusterIps {@code spec.clusterIPs}, else {@code spec.clusterIP}; raw text ("None" for headless)
 * @param ingress {@code status.loadBalancer.ingress}, in order
 * @param externalTrafficPolicy {@code spec.externalTrafficPolicy} ("Cluster" when unset)
 * @param nodePorts {@code spec.ports[].nodePort}, those that are set (non-zero), in order
 */
public record ServiceInfo(ObjectRef ref, String type, List<String> clusterIps, List<Ingress> ingress,
    String externalTrafficPolicy, List<Integer> nodePorts) {
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

  /** A Service with the default external traffic policy and no node ports. */
  public ServiceInfo(ObjectRef ref, String type, List<String> clusterIps, List<Ingress> ingress) {
    this(ref, type, clusterIps, ingress, "", List.of());
  }

  /** One {@code status.loadBalancer.ingress} entry; either field may be "". */
  public record Ingress(String ip, String hostname) {
    public Ingress {
      ip = ip == null ? "" : ip.trim();
      hostname = hostname == null ? "" : hostname;
    }
  }
}

package io.egressservice.plan;

import java.util.List;

/**
 * What the plan needs of a Service.
 *
 * @param type {@code spec.type} ("ClusterIP" when unset)
 * @param clusterIps {@code spec.clusterIPs}, else {@code spec.clusterIP}; raw text ("None" for headless)
 * @param ingress {@code status.loadBalancer.ingress}, in order
 */
public record ServiceInfo(ObjectRef ref, String type, List<String> clusterIps, List<Ingress> ingress) {
  public static final String LOAD_BALANCER = "LoadBalancer";

  public ServiceInfo {
    type = type == null || type.isEmpty() ? "ClusterIP" : type;
    clusterIps = List.copyOf(clusterIps);
    ingress = List.copyOf(ingress);
  }

  /** One {@code status.loadBalancer.ingress} entry; either field may be "". */
  public record Ingress(String ip, String hostname) {
    public Ingress {
      ip = ip == null ? "" : ip.trim();
      hostname = hostname == null ? "" : hostname;
    }
  }
}

package io.egressservice.plan;

import io.egressservice.ip.IpPrefix;
import java.util.List;

/**
 * The node agent's configuration that shapes the plan (the same flags on {@code run}, {@code plan}
 * and {@code apply}).
 *
 * @param priority P: service rules at P, in-cluster rules at P-1
 * @param ruleProtocol the {@code protocol} our rules carry; it marks them as ours
 * @param clusterCidrs pod networks given by flag, in addition to the Nodes' {@code spec.podCIDRs}
 * @param serviceCidrs service networks (ClusterIPs)
 * @param excludeCidrs other in-cluster destinations (e.g. OVN-Kubernetes' masquerade subnet)
 * @param inClusterExclusion false turns off the P-1 rules and the SNAT exclusion set
 */
public record PlanConfig(
    int priority,
    int ruleProtocol,
    List<IpPrefix> clusterCidrs,
    List<IpPrefix> serviceCidrs,
    List<IpPrefix> excludeCidrs,
    boolean inClusterExclusion) {
  public static final int DEFAULT_PRIORITY = 5000;
  public static final int DEFAULT_RULE_PROTOCOL = 201;
  /** The main table's rule is at 32766; ours must come before it and leave room for P-1 above 0. */
  public static final int MAX_PRIORITY = 32765;

  public PlanConfig {
    if (priority < 2 || priority > MAX_PRIORITY) {
      throw new IllegalArgumentException(
          "priority must be between 2 and " + MAX_PRIORITY + " (P-1 holds the in-cluster rules), not " + priority);
    }
    if (ruleProtocol < 1 || ruleProtocol > 255) {
      throw new IllegalArgumentException("rule protocol must be between 1 and 255, not " + ruleProtocol);
    }
    clusterCidrs = List.copyOf(clusterCidrs);
    serviceCidrs = List.copyOf(serviceCidrs);
    excludeCidrs = List.copyOf(excludeCidrs);
  }

  public static PlanConfig defaults() {
    return new PlanConfig(DEFAULT_PRIORITY, DEFAULT_RULE_PROTOCOL, List.of(), List.of(), List.of(), true);
  }

  public PlanConfig withCidrs(List<IpPrefix> cluster, List<IpPrefix> service, List<IpPrefix> exclude) {
    return new PlanConfig(priority, ruleProtocol, cluster, service, exclude, inClusterExclusion);
  }
}

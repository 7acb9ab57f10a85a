package io.egressservice.model;

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
 * @param etpLocalMasqueradeIps OVN-Kubernetes' local-gateway ETP=Local masquerade IPs (at most one per family):
 *     replies of ETP=Local Services leave the host from {@code <ip>:<nodePort>}; empty when not on OVN-Kubernetes
 * @param steering what nodes other than {@code status.host} do with their local endpoints of a
 *     LoadBalancerIP service ({@code --remote-endpoints}, {@code --steer-table}, {@code --steer-port})
 * @param endpointTrust whose EndpointSlices are believed ({@code --trusted-endpoint-managers})
 * @param markNetworksPerNamespace mark mode: how many distinct networks the services of one namespace may hold a mark
 *     for on a node ({@code --mark-networks-per-namespace}; 0: no limit but the mask's)
 */
public record PlanConfig(
    int priority,
    int ruleProtocol,
    List<IpPrefix> clusterCidrs,
    List<IpPrefix> serviceCidrs,
    List<IpPrefix> excludeCidrs,
    boolean inClusterExclusion,
    RuleMode ruleMode,
    long markMask,
    List<IpPrefix> etpLocalMasqueradeIps,
    SteeringConfig steering,
    EndpointTrust endpointTrust,
    int markNetworksPerNamespace) {
  /**
   * A namespace's share of the default mask's 63 marks: eight namespaces can exhaust it only together, one alone
   * never (see {@code plan.NetworkMarks}).
   */
  public static final int DEFAULT_MARK_NETWORKS_PER_NAMESPACE = 8;
  public static final int DEFAULT_PRIORITY = 5000;
  public static final int DEFAULT_RULE_PROTOCOL = 201;
  /** The main table's rule is at 32766; ours must come before it and leave room for P-1 above 0. */
  public static final int MAX_PRIORITY = 32765;
  /**
   * Bits 24-29: clear of kube-proxy (0x4000, 0x8000), OVN-Kubernetes (pkt_mark 0x3f0), Cilium's
   * magic marks (0x0f00) and Istio (0x539); Calico (0xffff0000 by default) and Cilium's identity bits
   * (upper 16) overlap it, so on such clusters set --mark-mask to bits they leave free.
   */
  public static final long DEFAULT_MARK_MASK = 0x3f000000L;

  public PlanConfig {
    if (priority < 2 || priority > MAX_PRIORITY) {
      throw new IllegalArgumentException(
          "priority must be between 2 and " + MAX_PRIORITY + " (P-1 is ours too), not " + priority);
    }
    if (ruleProtocol < 1 || ruleProtocol > 255) {
      throw new IllegalArgumentException("rule protocol must be between 1 and 255, not " + ruleProtocol);
    }
    if (markMask <= 0 || markMask > 0xffffffffL || Long.bitCount(markMask) < 1) {
      throw new IllegalArgumentException("--mark-mask must be a non-zero 32-bit mask, not 0x" + Long.toHexString(markMask));
    }
    if (Long.bitCount(markMask) != 64 - Long.numberOfLeadingZeros(markMask) - Long.numberOfTrailingZeros(markMask)) {
      throw new IllegalArgumentException("--mark-mask must be contiguous bits (e.g. 0x3f000000), not 0x"
          + Long.toHexString(markMask));
    }
    clusterCidrs = List.copyOf(clusterCidrs);
    serviceCidrs = List.copyOf(serviceCidrs);
    excludeCidrs = List.copyOf(excludeCidrs);
    etpLocalMasqueradeIps = List.copyOf(etpLocalMasqueradeIps);
    java.util.Set<io.egressservice.ip.IpFamily> families = new java.util.HashSet<>();
    for (IpPrefix ip : etpLocalMasqueradeIps) {
      if (!ip.isHost()) {
        throw new IllegalArgumentException("an ETP=Local masquerade IP must be an address, not " + ip);
      }
      if (!families.add(ip.family())) {
        throw new IllegalArgumentException("at most one ETP=Local masquerade IP per family, not " + etpLocalMasqueradeIps);
      }
    }
    if (steering == null) {
      throw new IllegalArgumentException("a steering configuration is required");
    }
    java.util.Objects.requireNonNull(endpointTrust, "endpointTrust");
    if (markNetworksPerNamespace < 0) {
      throw new IllegalArgumentException("--mark-networks-per-namespace must be 0 (no limit) or more, not "
          + markNetworksPerNamespace);
    }
  }

  /** With the default limit of networks per namespace in mark mode. */
  public PlanConfig(int priority, int ruleProtocol, List<IpPrefix> clusterCidrs, List<IpPrefix> serviceCidrs,
      List<IpPrefix> excludeCidrs, boolean inClusterExclusion, RuleMode ruleMode, long markMask,
      List<IpPrefix> etpLocalMasqueradeIps, SteeringConfig steering, EndpointTrust endpointTrust) {
    this(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion, ruleMode, markMask,
        etpLocalMasqueradeIps, steering, endpointTrust, DEFAULT_MARK_NETWORKS_PER_NAMESPACE);
  }

  /** Trusting the EndpointSlice controller only. */
  public PlanConfig(int priority, int ruleProtocol, List<IpPrefix> clusterCidrs, List<IpPrefix> serviceCidrs,
      List<IpPrefix> excludeCidrs, boolean inClusterExclusion, RuleMode ruleMode, long markMask,
      List<IpPrefix> etpLocalMasqueradeIps, SteeringConfig steering) {
    this(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion, ruleMode, markMask,
        etpLocalMasqueradeIps, steering, EndpointTrust.kubernetesOnly());
  }

  /** With the default steering ({@code --remote-endpoints=steer}, tables 7000-7255, port 4799). */
  public PlanConfig(int priority, int ruleProtocol, List<IpPrefix> clusterCidrs, List<IpPrefix> serviceCidrs,
      List<IpPrefix> excludeCidrs, boolean inClusterExclusion, RuleMode ruleMode, long markMask,
      List<IpPrefix> etpLocalMasqueradeIps) {
    this(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion, ruleMode, markMask,
        etpLocalMasqueradeIps, SteeringConfig.defaults());
  }

  /** Not configured for OVN-Kubernetes' ETP=Local masquerade. */
  public PlanConfig(int priority, int ruleProtocol, List<IpPrefix> clusterCidrs, List<IpPrefix> serviceCidrs,
      List<IpPrefix> excludeCidrs, boolean inClusterExclusion, RuleMode ruleMode, long markMask) {
    this(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion, ruleMode, markMask,
        List.of());
  }

  /** Source mode with the default mark mask. */
  public PlanConfig(int priority, int ruleProtocol, List<IpPrefix> clusterCidrs, List<IpPrefix> serviceCidrs,
      List<IpPrefix> excludeCidrs, boolean inClusterExclusion) {
    this(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion, RuleMode.SOURCE,
        DEFAULT_MARK_MASK);
  }

  public static PlanConfig defaults() {
    return new PlanConfig(DEFAULT_PRIORITY, DEFAULT_RULE_PROTOCOL, List.of(), List.of(), List.of(), true);
  }

  public PlanConfig withCidrs(List<IpPrefix> cluster, List<IpPrefix> service, List<IpPrefix> exclude) {
    return new PlanConfig(priority, ruleProtocol, cluster, service, exclude, inClusterExclusion, ruleMode, markMask,
        etpLocalMasqueradeIps, steering, endpointTrust, markNetworksPerNamespace);
  }

  public PlanConfig withRuleMode(RuleMode mode, long mask) {
    return new PlanConfig(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion, mode,
        mask, etpLocalMasqueradeIps, steering, endpointTrust, markNetworksPerNamespace);
  }

  public PlanConfig withEtpLocalMasqueradeIps(List<IpPrefix> ips) {
    return new PlanConfig(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion,
        ruleMode, markMask, ips, steering, endpointTrust, markNetworksPerNamespace);
  }

  public PlanConfig withSteering(SteeringConfig s) {
    return new PlanConfig(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion, ruleMode,
        markMask, etpLocalMasqueradeIps, s, endpointTrust, markNetworksPerNamespace);
  }

  public PlanConfig withEndpointTrust(EndpointTrust trust) {
    return new PlanConfig(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion,
        ruleMode, markMask, etpLocalMasqueradeIps, steering, trust, markNetworksPerNamespace);
  }

  /** Mark mode: at most {@code limit} distinct networks per namespace on a node (0: no limit). */
  public PlanConfig withMarkNetworksPerNamespace(int limit) {
    return new PlanConfig(priority, ruleProtocol, clusterCidrs, serviceCidrs, excludeCidrs, inClusterExclusion,
        ruleMode, markMask, etpLocalMasqueradeIps, steering, endpointTrust, limit);
  }

  /** The largest mark value the mask holds (values 1..max; 0 means "not marked"). */
  public long maxMarkValue() {
    return markMask >>> Long.numberOfTrailingZeros(markMask);
  }

  /** Value {@code n} (1..max) shifted into the mask's bits. */
  public long markOf(long n) {
    return n << Long.numberOfTrailingZeros(markMask);
  }
}

package io.egressservice.model;

import java.util.Locale;

/**
 * What a node does with its endpoints of a LoadBalancerIP service that has no host ({@code status.host} empty, or
 * naming no known Node): traffic that would leave the cluster with another source (the CNI's masquerade, the pod
 * IP) or through another network.
 */
public enum NoHost {
  /** Dropped (and counted per service) until a host is programmed: the identity promise holds. Default. */
  DROP,
  /** Left alone: it leaves as if the service had not opted in (OVN-Kubernetes' behaviour). */
  PASS;

  public static NoHost fromFlag(String value) {
    try {
      return valueOf(value.trim().toUpperCase(Locale.ROOT));
    } catch (IllegalArgumentException e) {
      throw new IllegalArgumentException("--no-host must be drop or pass, not '" + value + "'");
    }
  }

  public String flag() {
    return name().toLowerCase(Locale.ROOT);
  }
}

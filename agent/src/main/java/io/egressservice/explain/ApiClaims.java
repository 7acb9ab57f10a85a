package io.egressservice.explain;

import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * What the Kubernetes API says about one address: the pod that has it, and every EgressService whose Service's
 * EndpointSlices list it, with the reasons the agents and the allocator gave for what they did or refused.
 *
 * @param pod {@code namespace/name} of the pod with the address, if the API knows one
 * @param podNode the node the pod runs on, if known
 * @param claims the services whose slices list the address (with or without an EgressService)
 * @param nodesByAddress every Node's addresses, to name a steering host
 */
public record ApiClaims(Optional<String> pod, Optional<String> podNode, List<Claim> claims,
    Map<String, String> nodesByAddress) {
  public static final ApiClaims NONE = new ApiClaims(Optional.empty(), Optional.empty(), List.of(), Map.of());

  public ApiClaims {
    Objects.requireNonNull(pod);
    Objects.requireNonNull(podNode);
    claims = List.copyOf(claims);
    nodesByAddress = Map.copyOf(nodesByAddress);
  }

  /** These claims about the pod {@code namespace/name} on {@code node}, where the API named no pod (or another). */
  public ApiClaims forPod(String namespaceName, Optional<String> node) {
    return new ApiClaims(Optional.of(namespaceName), podNode.or(() -> node), claims, nodesByAddress);
  }

  /** The first claim that has an EgressService: the one whose rules can act on the address. */
  public Optional<Claim> egressClaim() {
    return claims.stream().filter(c -> c.egressService()).findFirst();
  }

  /**
   * One Service that lists the address as an endpoint.
   *
   * @param service {@code namespace/name}
   * @param egressService whether an EgressService of that name exists
   * @param sourceIpBy {@code LoadBalancerIP} or {@code Network}
   * @param network {@code spec.network}, empty when none
   * @param host {@code status.host}, empty when none
   * @param lbIps the Service's load-balancer ingress IPs
   * @param reasons the Events about the EgressService, newest last
   */
  public record Claim(String service, boolean egressService, String sourceIpBy, Optional<String> network,
      Optional<String> host, List<String> lbIps, List<Reason> reasons) {
    public Claim {
      Objects.requireNonNull(service);
      lbIps = List.copyOf(lbIps);
      reasons = List.copyOf(reasons);
    }

    /**
     * The Warning reasons (refusals, no host, ...) still in force: those of a reporter (a node's agent, the
     * allocator) that did not report a Normal outcome after them (an Event stays for an hour after it stopped being
     * true; "Service not found" while the Service was being created is history once the host is allocated).
     */
    public List<Reason> refusals() {
      // Events carry whole seconds: a Normal outcome in the same second as a Warning is after it when it comes
      // after it in the list (sorted by time, then in the order the API lists them: the order they were written)
      List<Reason> out = new java.util.ArrayList<>();
      for (int i = 0; i < reasons.size(); i++) {
        Reason r = reasons.get(i);
        boolean superseded = reasons.subList(i + 1, reasons.size()).stream().anyMatch(n -> n.type().equals("Normal")
            && n.reporter().equals(r.reporter()) && n.lastSeen().compareTo(r.lastSeen()) >= 0);
        if (r.type().equals("Warning") && !superseded) {
          out.add(r);
        }
      }
      return List.copyOf(out);
    }

    /** "LoadBalancerIP, network 100". */
    public String describe() {
      return sourceIpBy + network.map(n -> ", network " + n).orElse("");
    }
  }

  /** One Event: its type, reason, message, the node or component that wrote it, and when it was last seen. */
  public record Reason(String type, String reason, String message, String reporter, String lastSeen) {}
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.ServiceOutcome.SkippedEndpoint;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The cluster-wide checks of one EgressService (the same on every node) and its usable endpoints: what
 * {@link ServiceEvaluator} finds, and what {@link ServiceDecider} decides this node's part from. Kept in the
 * {@link ServicePlan}, so a change of who owns a contested endpoint re-decides without evaluating again.
 *
 * @param notConfiguredReason why nothing is planned for the service (its endpoints are kept: a node may hold its own)
 * @param lbIpRefusal LoadBalancerIP mode: why none of the ingress IPs may be the source (the host reports it)
 */
record ServiceEvaluation(
    Optional<String> notConfiguredReason,
    Optional<String> lbIpRefusal,
    ServiceInfo service,
    Map<IpFamily, IpPrefix> lbIps,
    List<CandidateEndpoint> endpoints,
    List<SkippedEndpoint> skipped) {
  /** Refused, but with the service's endpoints: a node may have to hold its own ones. */
  static ServiceEvaluation held(String reason, ServiceInfo service, Map<IpFamily, IpPrefix> lbIps,
      List<CandidateEndpoint> endpoints, List<SkippedEndpoint> skipped) {
    return new ServiceEvaluation(Optional.of(reason), Optional.empty(), service, lbIps, endpoints, skipped);
  }

  static ServiceEvaluation refused(String reason) {
    return new ServiceEvaluation(Optional.of(reason), Optional.empty(), new ServiceInfo(new ObjectRef("", ""), "", List.of(), List.of()),
        Map.of(), List.of(), List.of());
  }
}

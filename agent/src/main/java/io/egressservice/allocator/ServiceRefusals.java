package io.egressservice.allocator;

import io.egressservice.plan.GrantPolicy;
import io.egressservice.plan.HostLabels;
import io.egressservice.plan.NamespaceInfo;
import io.egressservice.plan.NetworkNames;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The refusals that give an EgressService no host whatever its endpoints, the same questions the node agents' plan
 * asks ({@code ServiceEvaluator}), so a service the allocator gives no host is one no agent configures even where
 * another allocator set its {@code status.host}: its network is not one any service may name, its host label is an
 * older service's ({@link HostLabels}), or the grants do not allow it ({@link GrantPolicy}). Pure; the host labels'
 * holders are kept in step with the services by {@link IncrementalAllocation}.
 */
final class ServiceRefusals {
  private final GrantPolicy policy;
  private final Map<String, NamespaceInfo> namespaces;
  private final HostLabels labels = new HostLabels();

  ServiceRefusals(GrantPolicy policy, Map<String, NamespaceInfo> namespaces, Collection<EgressServiceState> services) {
    this.policy = policy;
    this.namespaces = Map.copyOf(namespaces);
    services.forEach(this::put);
  }

  /** No policy enforced; the host labels of these services. */
  static ServiceRefusals withoutPolicy(Collection<EgressServiceState> services) {
    return new ServiceRefusals(GrantPolicy.off(), Map.of(), services);
  }

  /** Adds or updates a service; returns the others that share its host label (their decision may change). */
  List<ObjectRef> put(EgressServiceState es) {
    return labels.put(es.ref(), es.created());
  }

  /** Removes a service; returns the others that shared its host label. */
  List<ObjectRef> remove(ObjectRef ref) {
    return labels.remove(ref);
  }

  /** The decision of a service refused whatever its endpoints, or empty. */
  Optional<Decision> refusal(EgressServiceState es, Optional<ServiceInfo> service) {
    Optional<String> network = NetworkNames.problem(es.network());
    if (network.isPresent()) {
      return Optional.of(Decision.unallocated(es.ref(), Reason.INVALID_NETWORK, network.get()));
    }
    Optional<String> label = labels.refusal(es.ref());
    if (label.isPresent()) {
      return Optional.of(Decision.unallocated(es.ref(), Reason.HOST_LABEL_TAKEN, label.get()));
    }
    NamespaceInfo ns = namespaces.getOrDefault(es.ref().namespace(), NamespaceInfo.named(es.ref().namespace()));
    return policy.refusal(es.ref(), ns, es.network(), es.sourceIpBy(),
        service.map(GrantPolicy::loadBalancerIps).orElse(List.of()))
        .map(why -> Decision.unallocated(es.ref(), Reason.NOT_GRANTED, why));
  }
}

package io.egressservice.objects;

import io.egressservice.plan.GrantPolicy;
import io.egressservice.plan.NamespaceInfo;
import java.util.List;
import java.util.Objects;

/**
 * What the grants are read from: the EgressServicePolicy named {@code cluster} (as the plan reads it, enforced or
 * not as {@code --egress-service-policy} says) and the Namespaces' labels.
 */
public record GrantObjects(GrantPolicy policy, List<NamespaceInfo> namespaces) {
  public GrantObjects {
    Objects.requireNonNull(policy, "policy");
    namespaces = List.copyOf(namespaces);
  }

  /** No policy read, none enforced. */
  public static GrantObjects none() {
    return new GrantObjects(GrantPolicy.off(), List.of());
  }

  /** The same objects, with the policy enforced or not. */
  public GrantObjects enforced(boolean on) {
    return new GrantObjects(policy.enforced(on), namespaces);
  }
}

package io.egressservice.cli;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.informers.ClusterInformers;
import io.egressservice.objects.ClusterObjects;
import io.fabric8.kubernetes.client.KubernetesClient;
import picocli.CommandLine.Option;

/**
 * {@code --egress-service-policy}: whether the EgressServicePolicy named {@code cluster} decides which namespaces may
 * use which networks (and LoadBalancer IPs). On {@code run}, {@code allocator}, {@code plan} and {@code apply}; off by
 * default (every network allowed, as OVN-Kubernetes). Enforced, the process watches Namespaces and
 * EgressServicePolicies (so only then does it need to read them); {@code plan} and {@code apply} read the Namespace
 * and EgressServicePolicy documents of their files.
 */
public final class EgressServicePolicyOptions {
  @FromEnvironment
  @Option(names = "--egress-service-policy", defaultValue = "off",
      paramLabel = "off|enforce",
      description = "enforce: an EgressService is configured only if the EgressServicePolicy 'cluster' grants its "
          + "namespace its network (and LoadBalancer IPs); a missing policy grants nothing. off (default): every "
          + "network allowed, as OVN-Kubernetes.")
  String mode = "off";

  /** Whether the policy is enforced; a user error for any value but off and enforce. */
  boolean enforced() {
    return switch (mode == null ? "" : mode.trim()) {
      case "off" -> false;
      case "enforce" -> true;
      default -> throw new Main.UserError("--egress-service-policy must be off or enforce, not '" + mode + "'");
    };
  }

  /** The objects of the files, their policy enforced or not. */
  ClusterObjects applyTo(ClusterObjects objects) {
    return objects.withGrants(objects.grants().enforced(enforced()));
  }

  /** The allocator's configuration, the policy enforced or not. */
  AllocatorConfig applyTo(AllocatorConfig config) {
    return config.withGrantPolicy(enforced());
  }

  /** Shared informers: enforced, they also watch Namespaces and the policy. Before they start. */
  void attach(ClusterInformers informers, KubernetesClient client) {
    if (enforced()) {
      informers.followGrants(client);
    }
  }
}

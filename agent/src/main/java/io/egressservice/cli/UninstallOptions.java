package io.egressservice.cli;

import io.egressservice.uninstall.Owner;
import java.util.Locale;
import java.util.Optional;
import picocli.CommandLine.Option;

/**
 * The workload whose deletion uninstalls the process ({@code run}: its DaemonSet; {@code allocator}: its Deployment),
 * as the chart and deploy/ name it in the environment. Unset, the process never removes what it owns when it stops.
 */
public final class UninstallOptions {
  @FromEnvironment
  @Option(names = "--owner", paramLabel = "KIND/NAME",
      description = "This process's own workload, daemonset/<name> (run) or deployment/<name> (allocator); the chart "
          + "and deploy/ set it. When it is deleted (helm uninstall, kubectl delete; not a rolling update, a drain, a "
          + "node shutdown or a restart), the process removes what it owns as it stops: run its node's kernel state, "
          + "allocator its node labels, also-receive annotations and status.host. Unset: nothing is removed.")
  String owner;

  @FromEnvironment("EGRESS_AGENT_POD_NAMESPACE")
  @Option(names = "--owner-namespace",
      description = "The namespace of --owner (default: the pod's own, EGRESS_AGENT_POD_NAMESPACE from the downward "
          + "API).")
  String namespace;

  /** The workload named, of the kind this command runs as; a user error when it is malformed or of another kind. */
  Optional<Owner> owner(Owner.Kind expected) {
    if (owner == null || owner.isBlank()) {
      return Optional.empty();
    }
    String wanted = expected.name().toLowerCase(Locale.ROOT) + "/";
    if (!owner.toLowerCase(Locale.ROOT).startsWith(wanted) || owner.length() == wanted.length()) {
      throw new Main.UserError("--owner (EGRESS_AGENT_OWNER): '" + owner + "' is not " + wanted + "<name>: this "
          + "command runs in a " + expected);
    }
    if (namespace == null || namespace.isBlank()) {
      throw new Main.UserError("--owner " + owner + " needs --owner-namespace (or EGRESS_AGENT_POD_NAMESPACE)");
    }
    return Optional.of(new Owner(expected, namespace, owner.substring(wanted.length())));
  }
}

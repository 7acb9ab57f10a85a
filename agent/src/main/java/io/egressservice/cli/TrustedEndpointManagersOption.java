package io.egressservice.cli;

import io.egressservice.model.EndpointTrust;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import picocli.CommandLine.Option;

/**
 * {@code --trusted-endpoint-managers}, one flag for the node agents (through {@link PlanOptions}) and the allocator,
 * which must trust the same EndpointSlices: the agents take only trusted endpoints, and only those make a node a
 * candidate host.
 */
public final class TrustedEndpointManagersOption {
  @FromEnvironment
  @Option(names = "--trusted-endpoint-managers", split = ",", paramLabel = "MANAGER",
      description = "EndpointSlice managers (label endpointslice.kubernetes.io/managed-by) whose endpoints are taken,"
          + " in addition to Kubernetes' EndpointSlice controller for Services with a selector: e.g."
          + " endpointslicemirroring-controller.k8s.io (hand-written Endpoints of selector-less Services) or a load"
          + " balancer's controller; only trusted endpoints make a node a candidate host. The node agents and the"
          + " allocator take it alike (set both the same). Repeatable.")
  List<String> managers = new ArrayList<>();

  /** The managers as label values; a bad one is a {@link Main.UserError}. */
  EndpointTrust toTrust() {
    Set<String> names = new TreeSet<>();
    for (String m : managers) {
      if (m == null || m.isBlank()) {
        continue;
      }
      String name = m.trim();
      if (!name.matches("[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?") || name.length() > 63) {
        throw new Main.UserError("--trusted-endpoint-managers: '" + name + "' is not a label value (the"
            + " endpointslice.kubernetes.io/managed-by of the slices to trust, e.g."
            + " endpointslicemirroring-controller.k8s.io)");
      }
      names.add(name);
    }
    return new EndpointTrust(names);
  }
}

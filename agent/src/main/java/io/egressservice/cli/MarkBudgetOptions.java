package io.egressservice.cli;

import io.egressservice.model.PlanConfig;
import picocli.CommandLine.Option;

/** Mark mode's budget: how many of the mask's marks one namespace may hold on a node. */
public final class MarkBudgetOptions {
  @FromEnvironment
  @Option(names = "--mark-networks-per-namespace",
      defaultValue = "" + PlanConfig.DEFAULT_MARK_NETWORKS_PER_NAMESPACE,
      description = "Mark mode: the distinct networks the EgressServices of one namespace may hold a mark for on a"
          + " node; a service whose network would be one more is refused there (its namespace's youngest first), so"
          + " one namespace cannot take the whole --mark-mask. 0: no limit but the mask's. Default ${DEFAULT-VALUE}.")
  int markNetworksPerNamespace;

  PlanConfig applyTo(PlanConfig config) {
    if (markNetworksPerNamespace < 0) {
      throw new Main.UserError("--mark-networks-per-namespace must be 0 (no limit) or more, not "
          + markNetworksPerNamespace);
    }
    return config.withMarkNetworksPerNamespace(markNetworksPerNamespace);
  }
}

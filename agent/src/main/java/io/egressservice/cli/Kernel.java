package io.egressservice.cli;

import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.kernel.KernelProbe;
import io.egressservice.plan.PlanConfig;
import java.util.Optional;

/** Opens the dataplane for a command, turning failures into exit code 2 with the reason. */
final class Kernel {
  private Kernel() {}

  static Dataplane open(Optional<String> netns, int priority, int protocol) {
    try {
      return Dataplane.open(netns, priority, protocol);
    } catch (DataplaneException e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }

  /**
   * Probes the kernel's features ({@link KernelProbe}) before the dataplane opens: the configuration with any
   * fallback applied, or exit 2 naming each missing feature and the first versions that have it.
   */
  static PlanConfig admit(PlanConfig config) {
    try {
      return KernelProbe.atStartup(config);
    } catch (KernelProbe.MissingFeatures e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }
}

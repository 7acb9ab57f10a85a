package io.egressservice.cli;

import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.kernel.Kernel;
import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.probe.KernelProbe;
import io.egressservice.model.PlanConfig;
import java.util.Optional;

/** Opens the dataplane for a command, turning failures into exit code 2 with the reason. */
final class KernelAccess {
  private KernelAccess() {}

  static Dataplane open(Optional<String> netns, int priority, int protocol) {
    return open(openLinux(netns), priority, protocol);
  }

  /** The dataplane on {@code kernel} (closed with it, also when this fails). */
  static Dataplane open(Kernel kernel, int priority, int protocol) {
    try {
      return Dataplane.open(kernel, priority, protocol);
    } catch (DataplaneException e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }

  /** The kernel of {@code netns} (empty: the process's own namespace). */
  static LinuxKernel openLinux(Optional<String> netns) {
    try {
      return LinuxKernel.open(netns);
    } catch (NetlinkException e) {
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

package io.egressservice.cli;

import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
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
}

package io.egressservice.uninstall;

/**
 * What a stopping process does with what it owns: remove it ({@code uninstall}: its workload is gone or being
 * deleted) or leave it for its successor (a restart, a rolling update, a drain, a node shutdown), and why.
 */
public record StopVerdict(boolean uninstall, String reason) {
  static StopVerdict keep(String reason) {
    return new StopVerdict(false, reason);
  }

  static StopVerdict remove(String reason) {
    return new StopVerdict(true, reason);
  }
}

package io.egressservice.uninstall;

import java.util.Objects;

/**
 * The workload whose deletion means "uninstall" for a process: the node agents' DaemonSet, or the allocator's
 * Deployment. Named by the chart and deploy/ in the process's environment (the namespace by the downward API).
 */
public record Owner(Kind kind, String namespace, String name) {
  /** The kinds a process may belong to (group apps, version v1). */
  public enum Kind {
    DAEMONSET("DaemonSet"),
    DEPLOYMENT("Deployment");

    private final String display;

    Kind(String display) {
      this.display = display;
    }

    @Override
    public String toString() {
      return display;
    }
  }

  public Owner {
    Objects.requireNonNull(kind);
    if (namespace == null || namespace.isBlank() || name == null || name.isBlank()) {
      throw new IllegalArgumentException(kind + ": a namespace and a name are required");
    }
  }

  @Override
  public String toString() {
    return kind + " " + namespace + "/" + name;
  }
}

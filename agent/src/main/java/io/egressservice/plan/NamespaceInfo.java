package io.egressservice.plan;

import java.util.HashMap;
import java.util.Map;

/**
 * What the plan needs of a Namespace: its labels, which grants select it by. A namespace the plan has no
 * Namespace object of (a file without one, an informer not caught up yet) has only the label Kubernetes gives
 * every namespace, {@value #NAME_LABEL}.
 */
public record NamespaceInfo(String name, Map<String, String> labels) {
  /** The label the API server puts on every namespace, its name. */
  public static final String NAME_LABEL = "kubernetes.io/metadata.name";

  public NamespaceInfo {
    name = name == null ? "" : name;
    Map<String, String> all = new HashMap<>(labels == null ? Map.of() : labels);
    all.remove(null);
    all.replaceAll((k, v) -> v == null ? "" : v);
    // Kubernetes sets it on every namespace; a file that omits it means the same namespace.
    all.putIfAbsent(NAME_LABEL, name);
    labels = Map.copyOf(all);
  }

  /** A namespace known by name only. */
  public static NamespaceInfo named(String name) {
    return new NamespaceInfo(name, Map.of());
  }
}

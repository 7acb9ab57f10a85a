package io.egressservice.model;

/** A namespaced Kubernetes object's identity; prints as {@code namespace/name}. */
public record ObjectRef(String namespace, String name) implements Comparable<ObjectRef> {
  public ObjectRef {
    namespace = namespace == null ? "" : namespace;
    name = name == null ? "" : name;
  }

  @Override
  public int compareTo(ObjectRef o) {
    int c = namespace.compareTo(o.namespace);
    return c != 0 ? c : name.compareTo(o.name);
  }

  // Written out, as in netlink.Rule: plans key maps by ObjectRef, and the generated record methods are
  // slow under the agent's C1-only JIT.
  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof ObjectRef r && namespace.equals(r.namespace) && name.equals(r.name);
  }

  @Override
  public int hashCode() {
    return 31 * namespace.hashCode() + name.hashCode();
  }

  /** Whether {@link #toString} would give {@code text}, without building it. */
  public boolean printsAs(String text) {
    return text.length() == namespace.length() + 1 + name.length() && text.startsWith(namespace)
        && text.charAt(namespace.length()) == '/' && text.endsWith(name);
  }

  @Override
  public String toString() {
    return namespace + "/" + name;
  }
}

package io.egressservice.plan;

import java.util.Comparator;

/** A namespaced Kubernetes object's identity; prints as {@code namespace/name}. */
public record ObjectRef(String namespace, String name) implements Comparable<ObjectRef> {
  private static final Comparator<ObjectRef> ORDER =
      Comparator.comparing(ObjectRef::namespace).thenComparing(ObjectRef::name);

  public ObjectRef {
    namespace = namespace == null ? "" : namespace;
    name = name == null ? "" : name;
  }

  @Override
  public int compareTo(ObjectRef o) {
    return ORDER.compare(this, o);
  }

  @Override
  public String toString() {
    return namespace + "/" + name;
  }
}

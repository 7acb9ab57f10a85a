package io.egressservice.plan;

import java.util.OptionalLong;

/**
 * The routing table a rule looks up: resolved to an id on a node, or, in an offline plan, still the
 * name from {@code spec.network} (resolved by each node, as {@code ip rule} would from rt_tables).
 */
public record TableRef(OptionalLong id, String name) {
  public static final long MAIN = 254;

  public static TableRef of(long id) {
    return new TableRef(OptionalLong.of(id), Long.toString(id));
  }

  public static TableRef main() {
    return new TableRef(OptionalLong.of(MAIN), "main");
  }

  public static TableRef unresolved(String name) {
    return new TableRef(OptionalLong.empty(), name);
  }

  public boolean resolved() {
    return id.isPresent();
  }

  /** What {@code ip rule} takes after {@code lookup}. */
  @Override
  public String toString() {
    return name;
  }
}

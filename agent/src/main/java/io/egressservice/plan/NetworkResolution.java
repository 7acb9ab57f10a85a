package io.egressservice.plan;

import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * How the names in {@code spec.network} map to routing tables on this node: observed on the node (VRF
 * devices, {@code rt_tables}) before planning, so the plan itself stays pure.
 *
 * @param tables names that resolved, to their table id
 * @param failures names that did not, to a reason a person can act on
 * @param offline true when no node was observed (the {@code plan} command): unknown names are then
 *     kept by name, to be resolved on each node, instead of failing
 * @param routes which families the tables of the networks in use have a route of on this node ({@link TableRoutes});
 *     unknown offline
 */
public record NetworkResolution(Map<String, Long> tables, Map<String, String> failures, boolean offline,
    TableRoutes routes) {
  public NetworkResolution {
    tables = Map.copyOf(tables);
    failures = Map.copyOf(failures);
    java.util.Objects.requireNonNull(routes, "routes");
  }

  /** Without the tables' routes (none read). */
  public NetworkResolution(Map<String, Long> tables, Map<String, String> failures, boolean offline) {
    this(tables, failures, offline, TableRoutes.UNKNOWN);
  }

  public static NetworkResolution offlineResolution() {
    return new NetworkResolution(Map.of(), Map.of(), true);
  }

  /** The same names, with what the node's kernel showed of their tables' routes. */
  public NetworkResolution withRoutes(TableRoutes read) {
    return new NetworkResolution(tables, failures, offline, read);
  }

  /**
   * The table ids the {@code networks} name on this node, numbers and resolved names alike, without the tables the
   * kernel reserves (a network naming one is refused by the plan): the tables whose routes are worth reading.
   */
  public java.util.Set<Long> tablesOf(java.util.Collection<String> networks) {
    java.util.Set<Long> out = new java.util.TreeSet<>();
    for (String n : networks) {
      NetworkTables.resolve(n, this).table().ifPresent(t -> t.id().ifPresent(out::add));
    }
    return out;
  }

  OptionalLong table(String name) {
    Long id = tables.get(name);
    return id == null ? OptionalLong.empty() : OptionalLong.of(id);
  }

  Optional<String> failure(String name) {
    return Optional.ofNullable(failures.get(name));
  }
}

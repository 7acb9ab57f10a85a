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
 */
public record NetworkResolution(Map<String, Long> tables, Map<String, String> failures, boolean offline) {
  public NetworkResolution {
    tables = Map.copyOf(tables);
    failures = Map.copyOf(failures);
  }

  public static NetworkResolution offlineResolution() {
    return new NetworkResolution(Map.of(), Map.of(), true);
  }

  OptionalLong table(String name) {
    Long id = tables.get(name);
    return id == null ? OptionalLong.empty() : OptionalLong.of(id);
  }

  Optional<String> failure(String name) {
    return Optional.ofNullable(failures.get(name));
  }
}

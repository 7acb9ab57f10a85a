package io.egressservice.plan;

import io.egressservice.model.SteeringConfig;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The routing table an EgressService's {@code spec.network} names on this node: a table number, or a name
 * the node resolved (a VRF device, {@code rt_tables}), never a table the kernel or the agent reserves. Offline
 * (the {@code plan} command) an unknown name is kept by name, to be resolved on each node.
 */
final class NetworkTables {
  private NetworkTables() {}

  /** The table, or why the network cannot be used. */
  record TableOrFailure(Optional<TableRef> table, Optional<String> failure) {
    static TableOrFailure of(TableRef t) {
      return new TableOrFailure(Optional.of(t), Optional.empty());
    }

    static TableOrFailure failed(String reason) {
      return new TableOrFailure(Optional.empty(), Optional.of(reason));
    }
  }

  static TableOrFailure resolve(String network, NetworkResolution networks, SteeringConfig steering) {
    TableOrFailure t = resolve(network, networks);
    if (t.table().isPresent() && t.table().get().id().isPresent()) {
      Optional<String> problem = NetworkNames.resolvedProblem(network, t.table().get().id().getAsLong(), steering);
      if (problem.isPresent()) {
        return TableOrFailure.failed(problem.get());
      }
    }
    return t;
  }

  static TableOrFailure resolve(String network, NetworkResolution networks) {
    if (NetworkNames.isTableNumber(network)) {
      long id;
      try {
        id = Long.parseLong(network);
      } catch (NumberFormatException e) {
        id = -1;
      }
      if (id < 0 || id > 0xFFFFFFFFL) {
        return TableOrFailure.failed("network '" + network + "' is not a usable routing table id (1 to 4294967295)");
      }
      Optional<String> reserved = NetworkNames.reservedTable(id);
      if (reserved.isPresent()) {
        return TableOrFailure.failed("network '" + network + "' is " + reserved.get() + ", not an egress network");
      }
      return TableOrFailure.of(TableRef.of(id));
    }
    Optional<String> reservedName = NetworkNames.reservedName(network);
    if (reservedName.isPresent()) {
      return TableOrFailure.failed("network '" + network + "' is " + reservedName.get() + ", not an egress network");
    }
    OptionalLong id = networks.table(network);
    if (id.isPresent()) {
      Optional<String> reserved = NetworkNames.reservedTable(id.getAsLong());
      if (reserved.isPresent()) {
        return TableOrFailure.failed(
            "network '" + network + "' resolves to " + reserved.get() + ", not an egress network");
      }
      return TableOrFailure.of(new TableRef(id, network));
    }
    Optional<String> failure = networks.failure(network);
    if (failure.isPresent()) {
      return TableOrFailure.failed(failure.get());
    }
    if (networks.offline()) {
      return TableOrFailure.of(TableRef.unresolved(network));
    }
    return TableOrFailure.failed(
        "network '" + network + "' not found on this node: not a table number, a VRF device, or a name in"
            + " /etc/iproute2/rt_tables");
  }
}

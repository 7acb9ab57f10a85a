package io.egressservice.plan;

import io.egressservice.model.SteeringConfig;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

/**
 * What {@code spec.network} may name. The kernel's own tables are not egress networks: a rule into
 * {@code main} or {@code default} changes nothing while the service reports "routed", one into
 * {@code local} breaks the node's own delivery, and table 0 ({@code unspec}) is no table at all.
 */
public final class NetworkNames {
  /** The reserved ids of rt_tables(5), with the names iproute2 gives them. */
  private static final Map<Long, String> RESERVED = Map.of(0L, "unspec", 253L, "default", 254L, "main", 255L, "local");

  /**
   * What the CRD allows in {@code spec.network} (crds/egressservices.k8s.ovn.org.yaml, its pattern and CEL rules):
   * a table number without leading zeros, or a name as rt_tables and VRF devices allow. OVN-Kubernetes' own CRD has
   * no pattern, so the plan checks it again.
   */
  private static final Pattern SYNTAX = Pattern.compile("[1-9][0-9]{0,9}|[A-Za-z_][A-Za-z0-9_.-]{0,62}");
  /**
   * The largest table number the CRD allows. The kernel takes 4294967295 too (RT_TABLE_MAX; {@code ip rule add ...
   * lookup 4294967295} succeeds on 6.18), but the CRD refuses it, and so does the plan.
   */
  public static final long MAX_TABLE = 4294967294L;

  private NetworkNames() {}

  /**
   * Why {@code network} is not a network any EgressService may name, the same on every node (its spelling, a table
   * number above {@link #MAX_TABLE}), or empty when it may be (also ""). The kernel's and the agent's own tables are
   * refused where the network is resolved ({@link #resolvedProblem}), by the node that would route into them.
   */
  public static Optional<String> problem(String network) {
    if (network.isEmpty() || network.equals("0")) {
      // "0" (outside the CRD's pattern too) is the kernel's unspec table: refused where it is resolved, named so.
      return Optional.empty();
    }
    String quoted = TenantText.quoted(network);
    if (!SYNTAX.matcher(network).matches()) {
      return Optional.of(INVALID + quoted + " is neither a table number (1 to " + MAX_TABLE + ", no leading zero) nor"
          + " a table or VRF name (a letter or '_', then letters, digits, '_', '.' or '-', 63 characters at most)");
    }
    if (isTableNumber(network) && Long.parseLong(network) > MAX_TABLE) { // at most 10 digits: fits a long
      return Optional.of(INVALID + quoted + " is above the largest table number allowed, " + MAX_TABLE);
    }
    return Optional.empty();
  }

  /** How every refusal of {@link #problem} starts (not "network '", which marks a node's own failure). */
  public static final String INVALID = "invalid spec.network ";

  /**
   * Why table {@code id}, which {@code network} names or resolves to on this node, may not be an egress network: a
   * table the kernel reserves, or one of the agent's own steering tables ({@code --steer-table}), into which a
   * tenant must never put pods. Empty when it may.
   */
  public static Optional<String> resolvedProblem(String network, long id, SteeringConfig steering) {
    String verb = isTableNumber(network) ? " is " : " resolves to ";
    Optional<String> reserved = reservedTable(id);
    if (reserved.isPresent()) {
      return Optional.of("network " + TenantText.quoted(network) + verb + reserved.get() + ", not an egress network");
    }
    if (steering.isSteeringTable(id)) {
      return Optional.of("network " + TenantText.quoted(network) + verb + "table " + id + ", one of this agent's"
          + " steering tables (--steer-table " + steering.firstTable() + ": " + steering.firstTable() + " to "
          + (steering.firstTable() + SteeringConfig.TABLES - 1) + "), never an egress network");
    }
    if (id > MAX_TABLE) {
      return Optional.of("network " + TenantText.quoted(network) + verb + "table " + id
          + ", above the largest table number allowed, " + MAX_TABLE);
    }
    return Optional.empty();
  }

  /**
   * A table number: ASCII digits only. {@code Character.isDigit} and {@code Long.parseLong} also take other
   * scripts' digits ({@code ٢٥٤} is 254), which no other tool reads as a number.
   */
  public static boolean isTableNumber(String network) {
    if (network.isEmpty()) {
      return false;
    }
    for (int i = 0; i < network.length(); i++) {
      char c = network.charAt(i);
      if (c < '0' || c > '9') {
        return false;
      }
    }
    return true;
  }

  /** "the kernel's 'main' table (254)" when {@code id} is reserved, else empty. */
  public static Optional<String> reservedTable(long id) {
    String name = RESERVED.get(id);
    return name == null ? Optional.empty() : Optional.of("the kernel's '" + name + "' table (" + id + ")");
  }

  /**
   * "the kernel's 'main' table (254)" when {@code network} is a reserved name (case-sensitive, as in rt_tables),
   * else empty. Checked before any lookup, so also in an offline plan.
   */
  public static Optional<String> reservedName(String network) {
    for (Map.Entry<Long, String> e : RESERVED.entrySet()) {
      if (e.getValue().equals(network)) {
        return reservedTable(e.getKey());
      }
    }
    return Optional.empty();
  }
}

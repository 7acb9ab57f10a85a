package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * One desired ip rule: {@code from <source> lookup <table>} at P for a service; in mark mode,
 * {@code fwmark <mark>/<mask> lookup <table>} at P per network (no source, no single service). The
 * in-cluster exemption is not a rule but throw routes in those tables ({@link RouteSpec}).
 *
 * @param fwmark the mark value (already within the mask); empty in source mode
 * @param sourcePort {@code sport}: OVN-Kubernetes' ETP=Local rule ({@code from <masquerade IP> sport <nodePort>}),
 *     in both rule modes; empty otherwise
 */
public record RuleSpec(
    IpFamily family,
    int priority,
    Optional<IpPrefix> from,
    Optional<IpPrefix> to,
    TableRef table,
    Optional<ObjectRef> service,
    OptionalLong fwmark,
    OptionalInt sourcePort) {

  /** Without a source port. */
  public RuleSpec(IpFamily family, int priority, Optional<IpPrefix> from, Optional<IpPrefix> to, TableRef table,
      Optional<ObjectRef> service, OptionalLong fwmark) {
    this(family, priority, from, to, table, service, fwmark, OptionalInt.empty());
  }

  /** A source-mode rule (no fwmark). */
  public RuleSpec(IpFamily family, int priority, Optional<IpPrefix> from, Optional<IpPrefix> to, TableRef table,
      Optional<ObjectRef> service) {
    this(family, priority, from, to, table, service, OptionalLong.empty());
  }

  /**
   * (family, priority, from, to, fwmark, table name): the order of the JSON output and of {@code ip rule
   * show}. Written out rather than composed from {@code Comparator.comparing}: every plan sorts all its
   * rules, and the composed form's lambdas and Optional unwrapping are slow under the agent's C1-only JIT.
   */
  public static final Comparator<RuleSpec> ORDER = RuleSpec::compareForOrder;

  private static int compareForOrder(RuleSpec a, RuleSpec b) {
    int c = a.family.compareTo(b.family);
    if (c != 0) {
      return c;
    }
    c = Integer.compare(a.priority, b.priority);
    if (c != 0) {
      return c;
    }
    c = compareEmptyFirst(a.from, b.from);
    if (c != 0) {
      return c;
    }
    c = compareEmptyFirst(a.to, b.to);
    if (c != 0) {
      return c;
    }
    c = Integer.compare(a.sourcePort.orElse(0), b.sourcePort.orElse(0));
    if (c != 0) {
      return c;
    }
    c = Long.compare(a.fwmark.orElse(0), b.fwmark.orElse(0));
    return c != 0 ? c : a.table.name().compareTo(b.table.name());
  }

  private static int compareEmptyFirst(Optional<IpPrefix> a, Optional<IpPrefix> b) {
    if (a.isEmpty() || b.isEmpty()) {
      return a.isEmpty() ? (b.isEmpty() ? 0 : -1) : 1;
    }
    return a.get().compareTo(b.get());
  }
}

package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * One desired ip rule: {@code from <source> lookup <table>} at P for a service, or
 * {@code to <prefix> lookup main} at P-1 for in-cluster destinations (no service). In mark mode,
 * {@code fwmark <mark>/<mask> lookup <table>} at P per network (no source, no single service) and the
 * in-cluster rules scoped to each network's mark.
 *
 * @param fwmark the mark value (already within the mask); empty in source mode
 */
public record RuleSpec(
    IpFamily family,
    int priority,
    Optional<IpPrefix> from,
    Optional<IpPrefix> to,
    TableRef table,
    Optional<ObjectRef> service,
    OptionalLong fwmark) {

  /** A source-mode rule (no fwmark). */
  public RuleSpec(IpFamily family, int priority, Optional<IpPrefix> from, Optional<IpPrefix> to, TableRef table,
      Optional<ObjectRef> service) {
    this(family, priority, from, to, table, service, OptionalLong.empty());
  }

  /** (family, priority, from, to): the order of the JSON output and of {@code ip rule show}. */
  public static final Comparator<RuleSpec> ORDER =
      Comparator.comparing(RuleSpec::family)
          .thenComparingInt(RuleSpec::priority)
          .thenComparing(r -> r.from().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
          .thenComparing(r -> r.to().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
          .thenComparingLong(r -> r.fwmark().orElse(0))
          .thenComparing(r -> r.table().name());
}

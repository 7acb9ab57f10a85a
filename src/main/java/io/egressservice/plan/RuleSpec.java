package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;
import java.util.Optional;

/**
 * One desired ip rule: {@code from <source> lookup <table>} at P for a service, or
 * {@code to <prefix> lookup main} at P-1 for in-cluster destinations (no service).
 */
public record RuleSpec(
    IpFamily family,
    int priority,
    Optional<IpPrefix> from,
    Optional<IpPrefix> to,
    TableRef table,
    Optional<ObjectRef> service) {

  /** (family, priority, from, to): the order of the JSON output and of {@code ip rule show}. */
  public static final Comparator<RuleSpec> ORDER =
      Comparator.comparing(RuleSpec::family)
          .thenComparingInt(RuleSpec::priority)
          .thenComparing(r -> r.from().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
          .thenComparing(r -> r.to().orElse(null), Comparator.nullsFirst(Comparator.naturalOrder()))
          .thenComparing(r -> r.table().name());
}

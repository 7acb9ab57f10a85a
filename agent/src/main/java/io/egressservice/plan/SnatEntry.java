package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;

/** One element of the {@code snat_v4}/{@code snat_v6} map: endpoint address to LoadBalancer IP. */
public record SnatEntry(IpPrefix source, IpPrefix to, ObjectRef service) {
  /** By source, then target; written out for the same reason as {@link RuleSpec#ORDER}. */
  public static final Comparator<SnatEntry> ORDER = (a, b) -> {
    int c = a.source.compareTo(b.source);
    return c != 0 ? c : a.to.compareTo(b.to);
  };

  public IpFamily family() {
    return source.family();
  }
}

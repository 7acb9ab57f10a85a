package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;

/** One element of the {@code snat_v4}/{@code snat_v6} map: endpoint address to LoadBalancer IP. */
public record SnatEntry(IpPrefix source, IpPrefix to, ObjectRef service) {
  public static final Comparator<SnatEntry> ORDER =
      Comparator.comparing(SnatEntry::source).thenComparing(SnatEntry::to);

  public IpFamily family() {
    return source.family();
  }
}

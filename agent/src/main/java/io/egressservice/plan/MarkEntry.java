package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;

/** Mark mode: the source (endpoint or ClusterIP) whose packets get {@code mark}, i.e. go to {@code table}. */
public record MarkEntry(IpPrefix source, long table, long mark, ObjectRef service) {
  public static final Comparator<MarkEntry> ORDER = (a, b) -> a.source.compareTo(b.source);

  public IpFamily family() {
    return source.family();
  }
}

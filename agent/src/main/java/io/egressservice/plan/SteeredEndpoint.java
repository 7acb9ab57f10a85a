package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Comparator;

/**
 * A local endpoint this node steers to the service's host: its egress goes through {@code table}
 * (a default route over the agent's device to {@code hostAddress}, the host's InternalIP of the family).
 */
public record SteeredEndpoint(ObjectRef service, IpPrefix source, String host, IpPrefix hostAddress, long table) {
  public static final Comparator<SteeredEndpoint> ORDER = (a, b) -> a.source.compareTo(b.source);

  public IpFamily family() {
    return source.family();
  }

  @Override
  public String toString() {
    return source + " -> " + host + " (" + hostAddress + ")";
  }
}

package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import java.util.Objects;

/**
 * A conntrack entry as {@link Conntrack#dump} lists it: its original tuple (the direction of the flow's first
 * packet), its reply tuple (what answers look like, after NAT) and its zone (0, the default, when the kernel dumped
 * none).
 */
public record ConntrackEntry(ConntrackTuple original, ConntrackTuple reply, int zone) {
  public ConntrackEntry {
    Objects.requireNonNull(original, "original");
    Objects.requireNonNull(reply, "reply");
    if ((zone & ~0xffff) != 0) {
      throw new IllegalArgumentException("a conntrack zone is 16 bits: " + zone);
    }
  }

  /** An entry of the default zone. */
  public ConntrackEntry(ConntrackTuple original, ConntrackTuple reply) {
    this(original, reply, 0);
  }

  public IpFamily family() {
    return original.source().family();
  }

  /**
   * Whether the flow's source address was translated (SNAT, masquerade): its answers come back to another address
   * than the one it was sent from. False when the flow left with its source's own address (no NAT, or an identity
   * NAT).
   */
  public boolean sourceTranslated() {
    return !reply.destination().equals(original.source());
  }

  /** How a delete names this entry: its original tuple in its zone. */
  public ConntrackKey key() {
    return new ConntrackKey(original, zone);
  }
}

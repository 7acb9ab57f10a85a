package io.egressservice.netlink;

import java.util.Objects;

/**
 * What names one conntrack entry to {@link Conntrack#delete}: the original tuple of the entry and its zone (as
 * {@code conntrack -D} with a full tuple and {@code --zone}).
 */
public record ConntrackKey(ConntrackTuple original, int zone) {
  public ConntrackKey {
    Objects.requireNonNull(original, "original");
    if ((zone & ~0xffff) != 0) {
      throw new IllegalArgumentException("a conntrack zone is 16 bits: " + zone);
    }
  }
}

package io.egressservice.netlink;

import java.util.List;

/**
 * A dump's entries (those its caller kept) and how the kernel answered it; no entries unless {@code answer} is
 * {@link ConntrackAnswer#done()}.
 */
public record ConntrackDump(List<ConntrackEntry> entries, ConntrackAnswer answer) {
  public ConntrackDump {
    entries = List.copyOf(entries);
    if (!answer.done() && !entries.isEmpty()) {
      throw new IllegalArgumentException("a failed dump has no entries");
    }
  }

  /** A dump the kernel refused or left unanswered. */
  public static ConntrackDump failed(ConntrackAnswer answer) {
    return new ConntrackDump(List.of(), answer);
  }
}

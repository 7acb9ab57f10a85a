package io.egressservice.kernel;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.ConntrackAnswer;
import io.egressservice.netlink.ConntrackDump;
import io.egressservice.netlink.ConntrackEntry;
import io.egressservice.netlink.ConntrackKey;
import java.util.List;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The connection tracking table of one network namespace: its entries listed and deleted one by one (the kernel's
 * side of {@code netlink.Conntrack}; which flows restart, and when, is the dataplane's). The kernel's refusals come
 * back as answers; a table that cannot be reached at all throws (a {@code NetlinkException}, or an
 * {@code IllegalArgumentException} for an answer that cannot be read).
 */
public interface Flows {
  /** One dump of the entries of {@code families} (both: one walk of the whole table) that {@code keep} accepts. */
  ConntrackDump dump(Set<IpFamily> families, Predicate<ConntrackEntry> keep);

  /**
   * One dump narrowed in the kernel to the IPv4 original source {@code source} (Linux 5.8; an older kernel walks
   * and returns the whole table, so {@code keep} must check the source too; a kernel that refuses the form answers
   * EINVAL or EOPNOTSUPP), the entries {@code keep} accepts.
   */
  ConntrackDump dumpFrom(IpPrefix source, Predicate<ConntrackEntry> keep);

  /** Deletes the entries {@code keys} name, in order; an answer each, in the same order (gone: ENOENT). */
  List<ConntrackAnswer> delete(List<ConntrackKey> keys);
}

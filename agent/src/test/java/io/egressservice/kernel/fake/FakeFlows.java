package io.egressservice.kernel.fake;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.Flows;
import io.egressservice.netlink.ConntrackAnswer;
import io.egressservice.netlink.ConntrackDump;
import io.egressservice.netlink.ConntrackEntry;
import io.egressservice.netlink.ConntrackKey;
import io.egressservice.netlink.NetlinkException;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Predicate;

/**
 * The conntrack table of a fake namespace: the flows a test puts in ({@link #add}), dumped and deleted as the kernel
 * answers (a delete of an entry that is gone: ENOENT), each delete recorded, so that a controller test sees which
 * flows a move restarted. No packet ever creates an entry here.
 */
public final class FakeFlows implements Flows {
  private final Map<ConntrackKey, ConntrackEntry> entries = new LinkedHashMap<>();
  private final List<ConntrackKey> deleted = new ArrayList<>();

  /** A flow, as the kernel would track it once its first packet passed. */
  public synchronized void add(ConntrackEntry entry) {
    entries.put(entry.key(), entry);
  }

  @Override
  public synchronized ConntrackDump dump(Set<IpFamily> families, Predicate<ConntrackEntry> keep) {
    return new ConntrackDump(entries.values().stream().filter(e -> families.contains(e.family())).filter(keep)
        .toList(), ConntrackAnswer.DONE);
  }

  /** As Linux 5.8 and later: narrowed to IPv4 original source {@code source}. */
  @Override
  public synchronized ConntrackDump dumpFrom(IpPrefix source, Predicate<ConntrackEntry> keep) {
    if (source.family() != IpFamily.V4) {
      return ConntrackDump.failed(ConntrackAnswer.refused(NetlinkException.EINVAL));
    }
    return new ConntrackDump(entries.values().stream().filter(e -> e.original().source().equals(source))
        .filter(keep).toList(), ConntrackAnswer.DONE);
  }

  @Override
  public synchronized List<ConntrackAnswer> delete(List<ConntrackKey> keys) {
    List<ConntrackAnswer> answers = new ArrayList<>();
    for (ConntrackKey k : keys) {
      if (entries.remove(k) == null) {
        answers.add(ConntrackAnswer.refused(NetlinkException.ENOENT));
      } else {
        deleted.add(k);
        answers.add(ConntrackAnswer.DONE);
      }
    }
    return answers;
  }

  /** The flows there now. */
  public synchronized List<ConntrackEntry> entries() {
    return List.copyOf(entries.values());
  }

  /** The flows deleted so far, in order. */
  public synchronized List<ConntrackKey> deleted() {
    return List.copyOf(deleted);
  }
}

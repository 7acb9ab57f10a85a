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
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Predicate;

/**
 * An in-memory conntrack table behind the {@link Flows} port: the entries a test added, dumped and deleted as the
 * kernel would (a delete names an entry by its original tuple and zone; one not there is answered ENOENT), with the
 * kernels users run switchable ({@link Narrowing}) and failures on demand. It records every request, in order, as a
 * line ({@link #requests()}), so that a test can check which dumps ran and what was deleted when.
 */
public final class FakeConntrack implements Flows {
  /** What the kernel does with a dump narrowed to one source. */
  public enum Narrowing {
    /** Linux 5.8 and later: only that source's entries. */
    NARROWS,
    /** Before 5.8: the attribute is skipped and the whole table of the family comes back. */
    IGNORED,
    /** A kernel that refuses the form: EINVAL. */
    REFUSED
  }

  private final Map<ConntrackKey, ConntrackEntry> entries = new LinkedHashMap<>();
  private final Map<ConntrackKey, ConntrackAnswer> deleteAnswers = new HashMap<>();
  private final List<String> requests = new ArrayList<>();
  private Narrowing narrowing = Narrowing.NARROWS;
  private Optional<ConntrackAnswer> dumpAnswer = Optional.empty();
  private Optional<NetlinkException> unreachable = Optional.empty();
  private Runnable afterEachRequest = () -> {};

  /** Adds entries (an entry with the key of one already there replaces it, as a flow made again would). */
  public synchronized FakeConntrack add(ConntrackEntry... added) {
    for (ConntrackEntry e : added) {
      entries.put(e.key(), e);
    }
    return this;
  }

  /** The entries now, in the order they were added. */
  public synchronized List<ConntrackEntry> entries() {
    return List.copyOf(entries.values());
  }

  /** What the kernel does with a narrowed dump from now on ({@link Narrowing#NARROWS} at first). */
  public synchronized FakeConntrack narrowing(Narrowing narrowing) {
    this.narrowing = narrowing;
    return this;
  }

  /** Every dump from now on answered so, with no entries (empty: dumps answer normally again). */
  public synchronized FakeConntrack answerDumps(Optional<ConntrackAnswer> answer) {
    this.dumpAnswer = answer;
    return this;
  }

  /** A delete of {@code key} from now on answered so (the entry stays). */
  public synchronized FakeConntrack answerDelete(ConntrackKey key, ConntrackAnswer answer) {
    deleteAnswers.put(key, answer);
    return this;
  }

  /** Every request from now on throws {@code failure}, as a table whose socket cannot be opened. */
  public synchronized FakeConntrack unreachable(NetlinkException failure) {
    this.unreachable = Optional.of(failure);
    return this;
  }

  /** Runs after each request: what happens in the kernel between two requests (a packet making an entry). */
  public synchronized FakeConntrack afterEachRequest(Runnable meanwhile) {
    this.afterEachRequest = meanwhile;
    return this;
  }

  /**
   * The requests so far, one line each: {@code dump V4}, {@code dump V4 V6}, {@code dump from 10.0.0.5},
   * {@code delete udp 10.0.0.5:40000 > 192.0.2.10:7000} (with {@code zone N} when not the default one).
   */
  public synchronized List<String> requests() {
    return List.copyOf(requests);
  }

  @Override
  public ConntrackDump dump(Set<IpFamily> families, Predicate<ConntrackEntry> keep) {
    if (families.isEmpty()) {
      throw new IllegalArgumentException("a dump of no family");
    }
    ConntrackDump dump;
    synchronized (this) {
      request("dump " + String.join(" ", new TreeSet<>(families.stream().map(Enum::name).toList())));
      dump = dumpAnswer.map(ConntrackDump::failed)
          .orElseGet(() -> kept(e -> families.contains(e.family()), keep));
    }
    afterEachRequest.run();
    return dump;
  }

  @Override
  public ConntrackDump dumpFrom(IpPrefix source, Predicate<ConntrackEntry> keep) {
    if (source.family() != IpFamily.V4 || !source.isHost()) {
      throw new IllegalArgumentException("the kernel filters dumps by IPv4 host address only: " + source);
    }
    ConntrackDump dump;
    synchronized (this) {
      request("dump from " + source.addressText());
      dump = dumpAnswer.map(ConntrackDump::failed).orElseGet(() -> switch (narrowing) {
        case NARROWS -> kept(e -> e.original().source().equals(source), keep);
        case IGNORED -> kept(e -> e.family() == IpFamily.V4, keep);
        case REFUSED -> ConntrackDump.failed(ConntrackAnswer.refused(NetlinkException.EINVAL));
      });
    }
    afterEachRequest.run();
    return dump;
  }

  @Override
  public List<ConntrackAnswer> delete(List<ConntrackKey> keys) {
    if (keys.isEmpty()) {
      return List.of();
    }
    List<ConntrackAnswer> answers = new ArrayList<>();
    synchronized (this) {
      for (ConntrackKey key : keys) {
        request("delete " + key.original() + (key.zone() == 0 ? "" : " zone " + key.zone()));
        ConntrackAnswer refusal = deleteAnswers.get(key);
        if (refusal != null) {
          answers.add(refusal);
        } else {
          answers.add(entries.remove(key) != null ? ConntrackAnswer.DONE
              : ConntrackAnswer.refused(NetlinkException.ENOENT));
        }
      }
    }
    afterEachRequest.run();
    return List.copyOf(answers);
  }

  private void request(String line) {
    if (unreachable.isPresent()) {
      throw unreachable.get();
    }
    requests.add(line);
  }

  private ConntrackDump kept(Predicate<ConntrackEntry> dumped, Predicate<ConntrackEntry> keep) {
    return new ConntrackDump(entries.values().stream().filter(dumped).filter(keep).toList(), ConntrackAnswer.DONE);
  }
}

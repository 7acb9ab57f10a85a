package io.egressservice.dataplane;

import io.egressservice.ip.AddressRanges;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.Flows;
import io.egressservice.netlink.ConntrackAnswer;
import io.egressservice.netlink.ConntrackDump;
import io.egressservice.netlink.ConntrackEntry;
import io.egressservice.netlink.ConntrackKey;
import io.egressservice.netlink.NetlinkException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Predicate;

/**
 * Which conntrack entries go when endpoints' treatment changes, and in which order; {@link FlowRestarts} says when.
 * A flow's NAT is chosen by its first packet and kept by its conntrack entry: when an endpoint's treatment changes
 * (steered to a host, SNAT here, held), its flows out of the cluster must start over, or they keep leaving as before
 * (a steered flow's identity SNAT would carry the pod's own address out of the new host). Its flows inside the
 * cluster (pods, ClusterIPs, nodes) keep their entry: their treatment never changed, and a DNATed one (a ClusterIP)
 * cannot survive losing it.
 *
 * <p>How, on every kernel users run (5.14 and later, and older): a dump of the table, then a delete by exact original
 * tuple and zone per matching entry (see {@code netlink.Conntrack} for which kernel takes what). The kernel cannot
 * express "destination outside these prefixes", so the match is made here. A few IPv4 sources
 * ({@value #FILTERED_DUMPS_MAX} at most) take a dump narrowed to each in the kernel, first, and the rest (their IPv6
 * addresses) one dump of their family, so that a dual-stack endpoint's IPv4 flows restart without waiting for a walk
 * of the whole table. Every dump is matched here again (a kernel before 5.8 ignores the narrowing). A kernel that
 * refuses the narrowed dump (EINVAL, EOPNOTSUPP) is remembered, and the dumps are whole from then on. A dump walks
 * the table once, as the kernel's filtered delete would; one per reconcile with changed endpoints, whatever their
 * number.
 *
 * <p>Every method returns its errors, one line each, and never throws: a flow that cannot be restarted must not stop
 * a reconcile.
 */
final class ConntrackRestarts {
  /**
   * Up to this many IPv4 sources take a kernel-filtered dump each (the endpoints a fast-path reconcile switched);
   * more take one dump of their family, since each filtered dump still walks the whole table in the kernel.
   */
  static final int FILTERED_DUMPS_MAX = 4;
  /** At most this many rounds of {@link #deleteTakeovers}, this far apart. */
  private static final int TAKEOVER_ROUNDS = 5;
  private static final long TAKEOVER_ROUND_MILLIS = 3;

  private final Flows flows;
  private final Pause pause;
  /**
   * Whether the kernel refused a source-filtered dump. The first one is its own probe (no separate request on an
   * unused address): on a refusal the same call dumps whole, and so does every later one.
   */
  private volatile boolean filteredDumpRefused;

  ConntrackRestarts(Flows flows) {
    this(flows, Thread::sleep);
  }

  /** With the pauses between takeover rounds made by {@code pause} (tests record them). */
  ConntrackRestarts(Flows flows, Pause pause) {
    this.flows = flows;
    this.pause = pause;
  }

  /** Waits between two rounds of {@link #deleteTakeovers}. */
  interface Pause {
    void millis(long millis) throws InterruptedException;
  }

  /**
   * Deletes every entry whose original source is one of {@code sources} (host addresses) and whose original
   * destination lies outside {@code inCluster} (both families), each dump's entries right after that dump.
   *
   * @return the errors, one line each (empty when all went through)
   */
  List<String> restartFlowsLeavingTheCluster(Collection<IpPrefix> sources, Collection<IpPrefix> inCluster) {
    if (sources.isEmpty()) {
      return List.of();
    }
    List<String> errors = new ArrayList<>();
    guarded(errors, () -> dumps(Set.copyOf(sources), new AddressRanges(inCluster), errors,
        found -> deleteEach(found, errors)));
    return errors;
  }

  /**
   * The entries {@link #restartFlowsLeavingTheCluster} would delete now, found ahead of the change that makes them
   * stale, to be deleted by {@link #delete} right after it: the dumps (tens of milliseconds on a loaded machine, each
   * walks the whole table) then lie before the change, and only the deletes by exact tuple (one lookup each) after
   * it. A flow that starts in between is not found: a later {@link #restartFlowsLeavingTheCluster} catches it.
   */
  Found find(Collection<IpPrefix> sources, Collection<IpPrefix> inCluster) {
    if (sources.isEmpty()) {
      return Found.NONE;
    }
    List<ConntrackEntry> entries = new ArrayList<>();
    List<String> errors = new ArrayList<>();
    guarded(errors, () -> dumps(Set.copyOf(sources), new AddressRanges(inCluster), errors, entries::addAll));
    return new Found(entries, errors);
  }

  /** Deletes what {@link #find} found (an entry gone meanwhile is success); the errors, its own included. */
  List<String> delete(Found found) {
    if (found.entries().isEmpty()) {
      return found.errors();
    }
    List<String> errors = new ArrayList<>(found.errors());
    guarded(errors, () -> deleteEach(found.entries(), errors));
    return errors;
  }

  /**
   * Deletes again the entries that took over the flows {@code found} held with the source's own address (steered,
   * identity NAT). Such a flow's answers still arrive for a moment after its entry is deleted (the old host un-NATs
   * the answers to what it sent before the switch and routes them to the pod): one that arrives before the pod's
   * next packet makes a new entry with the outside host as its original source, the pod's flow becomes that entry's
   * reply direction, takes no SNAT, passes the no-host guard (original direction only) and leaves the uplink with the
   * pod's own address for as long as it runs (each answer keeps the entry alive). Its original tuple is the deleted
   * entry's reply tuple: no other flow can hold it, so deleting it is exact. Done right after the delete and again by
   * the later pass, once the answers in flight have arrived.
   */
  List<String> deleteTakeovers(Found found) {
    List<ConntrackEntry> untranslated = found.withoutSnat().entries();
    if (untranslated.isEmpty()) {
      return List.of();
    }
    List<String> errors = new ArrayList<>();
    guarded(errors, () -> {
      // A takeover lets the pod's packets out with its own address, each drawing an answer that could make it again
      // before the pod's next packet starts the flow over: again until a round finds none, a few milliseconds apart
      // (an answer still in flight by then arrives after the pod's next packet, which makes the flow's entry first,
      // and the answer then joins it instead).
      try {
        for (int round = 0; round < TAKEOVER_ROUNDS && deleteTakeoversOnce(untranslated, errors) > 0; round++) {
          pause.millis(TAKEOVER_ROUND_MILLIS);
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
      }
    });
    return errors;
  }

  /** Whether the kernel refused the source-filtered dump (then every dump is whole). */
  boolean filteredDumpRefused() {
    return filteredDumpRefused;
  }

  /**
   * Entries found by {@link #find}, to delete by exact tuple, and the errors of finding them.
   *
   * @param entries matched: from the sources asked for, to a destination outside the cluster
   */
  record Found(List<ConntrackEntry> entries, List<String> errors) {
    static final Found NONE = new Found(List.of(), List.of());

    Found {
      entries = List.copyOf(entries);
      errors = List.copyOf(errors);
    }

    /** How many entries were found. */
    int size() {
      return entries.size();
    }

    /**
     * Those of the found entries whose flow leaves with the source's own address (no SNAT: a steered flow's identity
     * NAT), with the errors of finding them.
     */
    Found withoutSnat() {
      return new Found(entries.stream().filter(e -> !e.sourceTranslated()).toList(), errors);
    }
  }

  /**
   * The dumps for {@code from}, each handed to {@code each} (its entries outside {@code keep}) as soon as it is read,
   * its failure added to {@code errors}: a few IPv4 sources filtered each first, then the rest in one dump.
   */
  private void dumps(Set<IpPrefix> from, AddressRanges keep, List<String> errors,
      Consumer<List<ConntrackEntry>> each) {
    Set<IpPrefix> rest = new HashSet<>(from);
    List<IpPrefix> v4 = from.stream().filter(p -> p.family() == IpFamily.V4).sorted().toList();
    if (v4.size() <= FILTERED_DUMPS_MAX) {
      // IPv4 first, each by its own kernel-filtered dump: its flows restart before the rest of the table is walked
      // for the other family (an endpoint switched under a steady stream loses what leaves meanwhile).
      for (IpPrefix source : v4) {
        if (filteredDumpRefused) {
          break;
        }
        ConntrackDump dump = flows.dumpFrom(source, leaving(Set.of(source), keep));
        int errno = dump.answer().errno();
        if (errno == NetlinkException.EINVAL || errno == NetlinkException.EOPNOTSUPP) {
          filteredDumpRefused = true; // asked once: from now on the dumps are whole
          break;
        }
        rest.remove(source);
        take(dump, "conntrack dump of source " + source.addressText(), errors, each);
      }
    }
    if (!rest.isEmpty()) {
      take(flows.dump(families(rest), leaving(rest, keep)), "conntrack dump", errors, each);
    }
  }

  private static void take(ConntrackDump dump, String what, List<String> errors,
      Consumer<List<ConntrackEntry>> each) {
    if (dump.answer().done()) {
      each.accept(dump.entries());
    } else {
      errors.add(what + ": " + dump.answer().describe());
    }
  }

  /** The entries from one of {@code sources} to a destination outside {@code keep}. */
  private static Predicate<ConntrackEntry> leaving(Set<IpPrefix> sources, AddressRanges keep) {
    return e -> sources.contains(e.original().source()) && !keep.contains(e.original().destination());
  }

  private static Set<IpFamily> families(Set<IpPrefix> sources) {
    Set<IpFamily> families = EnumSet.noneOf(IpFamily.class);
    sources.forEach(p -> families.add(p.family()));
    return families;
  }

  /**
   * Deletes each entry by its exact original tuple (and zone), then, right after and not only later (see {@link
   * #deleteTakeovers}), the entries that took over those of them without SNAT; one gone meanwhile is success.
   */
  private void deleteEach(List<ConntrackEntry> entries, List<String> errors) {
    List<ConntrackKey> keys = new ArrayList<>(entries.stream().map(ConntrackEntry::key).toList());
    List<ConntrackEntry> untranslated = entries.stream().filter(e -> !e.sourceTranslated()).toList();
    untranslated.forEach(e -> keys.add(takeover(e)));
    List<ConntrackAnswer> answers = flows.delete(keys);
    for (int i = 0; i < answers.size(); i++) {
      boolean original = i < entries.size();
      ConntrackEntry e = original ? entries.get(i) : untranslated.get(i - entries.size());
      failure(answers.get(i), e, !original).ifPresent(errors::add);
    }
  }

  /** One round of {@link #deleteTakeovers}: how many takeovers it deleted. */
  private int deleteTakeoversOnce(List<ConntrackEntry> untranslated, List<String> errors) {
    List<ConntrackAnswer> answers = flows.delete(untranslated.stream().map(ConntrackRestarts::takeover).toList());
    int deleted = 0;
    for (int i = 0; i < answers.size(); i++) {
      if (answers.get(i).done()) {
        deleted++;
      }
      failure(answers.get(i), untranslated.get(i), true).ifPresent(errors::add);
    }
    return deleted;
  }

  /** The entry that took over {@code e}'s flow: its original tuple is {@code e}'s reply tuple, in {@code e}'s zone. */
  private static ConntrackKey takeover(ConntrackEntry e) {
    return new ConntrackKey(e.reply(), e.zone());
  }

  private static Optional<String> failure(ConntrackAnswer answer, ConntrackEntry e, boolean takeover) {
    if (answer.done() || answer.gone()) {
      return Optional.empty();
    }
    return Optional.of("conntrack delete of a flow " + (takeover ? "to " : "from ") + e.original().source()
        .addressText() + ": " + answer.describe());
  }

  /** Runs {@code work}, a kernel that cannot be reached (or answers garbage) one more error line. */
  private static void guarded(List<String> errors, Runnable work) {
    try {
      work.run();
    } catch (NetlinkException | IllegalStateException | IllegalArgumentException e) {
      errors.add("conntrack restart: " + e.getMessage());
    }
  }
}

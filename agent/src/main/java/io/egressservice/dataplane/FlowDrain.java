package io.egressservice.dataplane;

import io.egressservice.kernel.Kernel;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.BatchResult;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Routing;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleChange;
import io.egressservice.nft.DrainNftables;
import io.egressservice.kernel.Nftables;
import io.egressservice.kernel.NftException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Make before break for this node's own endpoints when it becomes their host (the new host of a planned move). Until
 * then they were steered to the old host, and their flows' conntrack entries carry the NAT their first packet chose
 * there: the identity (the old host SNATs). Once the local rule routes them to the uplink, such a flow would leave
 * with the pod's own address, which the no-host guard drops, until its entry is deleted: a few milliseconds of a
 * stream lost on every move. So, around the switch, those established flows stay on their old path:
 *
 * <ol>
 *   <li>before the steering rule goes: {@link DrainNftables} marks the packets of the sources' confirmed entries
 *       without SNAT (flows made before the switch), and a rule per source {@code from <source> fwmark VALUE/MASK
 *       lookup <old host's steering table>} at P-1 sends them on to the old host, which still receives them (the
 *       also-receive annotation keeps it receiving for seconds);</li>
 *   <li>the steering rule goes: a new flow's first packet (not yet confirmed, so unmarked) takes the local route and
 *       its SNAT;</li>
 *   <li>the caller deletes those entries (again, until a round finds none): each flow's next packet starts it over
 *       on the local path;</li>
 *   <li>{@link #end}: the rules, then the table, go. No packet falls between: while an identity entry exists its
 *       packets are steered, and once it is gone they take the local SNAT.</li>
 * </ol>
 *
 * The old host lets a steered source out only SNATed to the LB IP, so nothing leaks if it has let go meanwhile (its
 * guard drops them: no worse than without the drain). Kernel: {@code fwmark}/mask and {@code from} rules are as old
 * as policy routing; see {@link DrainNftables} for the table (5.14 has all of it).
 */
final class FlowDrain implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(FlowDrain.class);
  /** How long a source's mark lasts if the drain is never ended (the agent dies mid-switch). */
  static final Duration EXPIRY = Duration.ofSeconds(10);

  /** A source and the steering table (of its old host, in its family) its established flows keep using. */
  record Entry(IpPrefix source, long table) {}

  /**
   * The sources to drain, and the mark that routes them: {@code value} within {@code mask} (the agent's
   * {@code --mark-mask}), one no network rule of this node uses.
   */
  record Plan(List<Entry> entries, long mask, long value) {
    static final Plan NONE = new Plan(List.of(), 0, 0);

    Plan {
      entries = List.copyOf(entries);
    }

    boolean isEmpty() {
      return entries.isEmpty();
    }

    Set<IpPrefix> sources() {
      return entries.stream().map(Entry::source).collect(Collectors.toCollection(TreeSet::new));
    }
  }

  /** A drain under way: the rules to delete at its end. */
  record Active(Plan plan, List<Rule> rules) {}

  private final Nftables client;
  private final DrainNftables table;
  private final Routing netlink;
  private final int priority;
  private final int protocol;
  private final Runnable committed;

  FlowDrain(Kernel kernel, int priority, int protocol, Runnable committed) {
    this.client = kernel.openNftables();
    this.table = new DrainNftables(client);
    this.netlink = kernel.routing();
    this.priority = priority;
    this.protocol = protocol;
    this.committed = committed;
  }

  /**
   * The mark value to drain with: the highest value of {@code mask} that none of {@code used} (the node's network
   * marks, before and after) has; empty when every value is taken (then no drain: the flows restart as before).
   */
  static Optional<Long> freeMark(long mask, Collection<Long> used) {
    int shift = Long.numberOfTrailingZeros(mask);
    for (long n = mask >>> shift; n >= 1; n--) {
      long mark = n << shift;
      if (!used.contains(mark)) {
        return Optional.of(mark);
      }
    }
    return Optional.empty();
  }

  /** The rule that keeps {@code e}'s established flows on its steering table. */
  Rule rule(Entry e, Plan plan) {
    return Rule.lookup(e.source().family(), priority - 1, (int) e.table()).from(e.source())
        .fwmark(plan.value(), plan.mask()).protocol(protocol);
  }

  /**
   * Marks the sources' established flows and routes them to their old host. Empty when that failed (said in the log,
   * and whatever went in taken out again): the caller restarts the flows as without a drain.
   */
  Optional<Active> begin(Plan plan) {
    if (plan.isEmpty()) {
      return Optional.empty();
    }
    try {
      table.write(plan.sources(), plan.mask(), plan.value(), EXPIRY);
      committed.run();
    } catch (NftException | IllegalStateException | IllegalArgumentException e) {
      LOG.warn("nft table inet {}: cannot keep the established flows of {} source(s) on their old host while they"
          + " switch to this one (they restart at once instead): {}", DrainNftables.TABLE, plan.entries().size(),
          e.getMessage());
      return Optional.empty();
    }
    List<Rule> rules = plan.entries().stream().map(e -> rule(e, plan)).toList();
    BatchResult<RuleChange> result = netlink.apply(rules.stream().map(RuleChange::add).toList(), true);
    List<Rule> added = new ArrayList<>(result.succeeded().stream().map(RuleChange::rule).toList());
    for (BatchResult.Failure<RuleChange> f : result.failed()) {
      if (f.error() instanceof NetlinkException.AlreadyExists) {
        added.add(f.change().rule()); // left by an agent that died mid-switch: ours to delete at the end
      } else {
        LOG.warn("rule {}: {} (its established flows restart at once instead)", f.change().rule(),
            f.error().getMessage());
      }
    }
    if (added.isEmpty()) {
      end(new Active(plan, List.of()));
      return Optional.empty();
    }
    return Optional.of(new Active(plan, added));
  }

  /** The rules, then the table, go; the errors, one line each (the next full reconcile deletes a rule left at P-1). */
  List<String> end(Active active) {
    List<String> errors = new ArrayList<>();
    if (!active.rules().isEmpty()) {
      BatchResult<RuleChange> result = netlink.apply(active.rules().stream().map(RuleChange::delete).toList(), true);
      for (BatchResult.Failure<RuleChange> f : result.failed()) {
        if (!(f.error() instanceof NetlinkException.NotFound)) {
          errors.add("rule " + f.change().rule() + " (drain of a switched source): " + f.error().getMessage());
        }
      }
    }
    try {
      table.delete();
      committed.run();
    } catch (NftException | IllegalStateException e) {
      // its elements expire by themselves (EXPIRY); the next drain replaces the table
      errors.add("nft table inet " + DrainNftables.TABLE + ": " + e.getMessage());
    }
    return errors;
  }

  /** Removes the table if present (cleanup); true when there was one. */
  boolean delete() {
    boolean present = client.tablePresent("inet", DrainNftables.TABLE);
    if (present) {
      table.delete();
    }
    return present;
  }

  @Override
  public void close() {
    client.close();
  }
}

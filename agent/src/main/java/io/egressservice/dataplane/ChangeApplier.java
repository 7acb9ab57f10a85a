package io.egressservice.dataplane;

import io.egressservice.kernel.Kernel;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.BatchResult;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteChange;
import io.egressservice.netlink.Routing;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleChange;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.nft.MarkNftables;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.kernel.NftException;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Writes a change set to one namespace's kernel, in its order: steering before, route additions, rule additions,
 * the nft transactions, the reverse-path sysctls, the mark transaction, rule deletions (with the early flow restart
 * around them, see {@link FlowRestarts}), route deletions, steering after. A refused request does not stop the
 * others; it is reported, and the kernel holds either the old or the new form of every object, which the next
 * reconcile completes. Only a missing privilege stops it ({@link DataplaneException}).
 */
final class ChangeApplier {
  /** Under the dataplane's name: its lines read as they did before this part had a file of its own. */
  private static final Logger LOG = LoggerFactory.getLogger(Dataplane.class);

  private final Kernel kernel;
  private final Routing netlink;
  private final EgressNftables nft;
  private final MarkNftables marks;
  private final SteeringDataplane steering;
  private final FlowRestarts restarts;
  /** Throw routes the kernel refused because someone else's route has that destination (warned once each). */
  private final Set<Route> conflicts = ConcurrentHashMap.newKeySet();

  /** What the fast path plans nft transactions from instead of a listing. */
  record KnownElements(Collection<SnatElement> snat, List<IpPrefix> marksRemoved, List<MarkElement> marksAdded) {}

  /** How rule adds go to the kernel. */
  enum RuleAdds {
    /** With NLM_F_EXCL: the kernel refuses a rule that is already there (a one-shot apply from a stale diff). */
    EXCLUSIVE,
    /** Without: the kernel skips its duplicate scan; only for rules planned against a fresh dump or the exact view. */
    KNOWN_ABSENT
  }

  ChangeApplier(Kernel kernel, EgressNftables nft, MarkNftables marks,
      SteeringDataplane steering, FlowRestarts restarts) {
    this.kernel = kernel;
    this.netlink = kernel.routing();
    this.nft = nft;
    this.marks = marks;
    this.steering = steering;
    this.restarts = restarts;
  }

  private String describe() {
    return kernel.describe();
  }

  /**
   * @param known the fast path's knowledge of the nft elements involved (the transactions are planned from it,
   *     without a listing); empty: planned from the (cached) listing
   * @param ruleAdds whether the kernel checks each added rule for a duplicate (it makes an add cost twice the rule
   *     list): only where the diff may be stale
   * @param early sources whose flows restart right after the rule deletions, when all went well so far
   *     ({@link FlowRestarts#forFullReconcile}, {@link FlowRestarts#forChanged})
   */
  ApplyReport apply(ChangeSet changes, Optional<KnownElements> known, RuleAdds ruleAdds,
      FlowRestarts.EarlyRestart early) {
    boolean exclusive = ruleAdds == RuleAdds.EXCLUSIVE;
    List<Change> applied = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    long kernel = 0;
    Map<Rule, Change> ruleChanges = new HashMap<>();
    List<Change> ruleAddChanges = new ArrayList<>();
    List<Change> nftChanges = new ArrayList<>();
    List<Change> ruleDeleteChanges = new ArrayList<>();
    List<Change> routeAddChanges = new ArrayList<>();
    List<Change> routeDeleteChanges = new ArrayList<>();
    for (Change c : changes.changes()) {
      if (c.kind() == Change.Kind.RULE) {
        (c.op() == Change.Op.ADD ? ruleAddChanges : ruleDeleteChanges).add(c);
      } else if (c.kind() == Change.Kind.ROUTE) {
        (c.op() == Change.Op.ADD ? routeAddChanges : routeDeleteChanges).add(c);
      } else {
        nftChanges.add(c);
      }
    }
    for (int i = 0; i < changes.ruleAdds().size(); i++) {
      ruleChanges.put(changes.ruleAdds().get(i), ruleAddChanges.get(i));
    }
    for (int i = 0; i < changes.ruleDeletes().size(); i++) {
      ruleChanges.put(changes.ruleDeletes().get(i), ruleDeleteChanges.get(i));
    }

    long t = System.nanoTime();
    if (!changes.steering().isEmpty()) {
      steering.applyBefore(changes.steering(), failures, applied);
    }
    routeBatch(changes.routeAdds().stream().map(RouteChange::add).toList(), routeAddChanges, applied, failures);
    // The kernel calls an added rule a duplicate of one that differs only in a family selector the new
    // one leaves unset (tos, realms: fib4_rule_compare checks them only when the request has them). When
    // such a stale rule is among the deletes, the exact rule goes in right after it is gone.
    List<RuleChange> shadowed = new ArrayList<>();
    batch(changes.ruleAdds().stream().map(RuleChange::add).toList(), ruleChanges, applied, failures,
        changes.ruleDeletes().isEmpty() ? null : shadowed, exclusive);
    kernel += System.nanoTime() - t;

    // Before the nft transactions: in mark mode the mark elements, not the rules, switch the sources' route.
    Optional<FlowDrain.Active> draining = failures.isEmpty() ? restarts.beginDrain(early) : Optional.empty();
    if (!changes.nft().isEmpty() || changes.ensureNftBase()) {
      t = System.nanoTime();
      try {
        // ensureBase: element changes need the maps and sets; an intact base is left untouched.
        List<EgressNftables.Refusal> refused = List.of();
        // Every commit of ours on the SNAT part, told to the mark cache as it happens: it keeps its listing instead
        // of listing the whole table again (a base repair touches only SNAT objects; the table exists after it).
        Runnable snatCommitted = marks::snatCommitted;
        if (known.isPresent()) {
          nft.applyKnown(changes.nft(), known.get().snat());
          snatCommitted.run();
        } else {
          refused = nft.applyInBatches(changes.nft(), true, snatCommitted);
        }
        Set<String> refusedLines = new HashSet<>();
        for (EgressNftables.Refusal r : refused) {
          refusedLines.add("snat " + r.element().source() + " -> " + r.element().target());
          failures.add("nft element snat " + r.element().source() + " -> " + r.element().target() + " ("
              + r.element().comment() + "): " + r.reason());
        }
        // steering changes are reported by the steering dataplane as it makes them (with the device's real index)
        applied.addAll(nftChanges.stream()
            .filter(c -> c.kind() != Change.Kind.MARK && c.kind() != Change.Kind.SYSCTL && c.kind() != Change.Kind.STEER)
            .filter(c -> refusedLines.isEmpty() || c.kind() != Change.Kind.SNAT
                || refusedLines.stream().noneMatch(l -> c.description().equals(l) || c.description().startsWith(l + " ")))
            .toList());
      } catch (NftException e) {
        failures.add("nft transaction (" + nftChanges.size() + " change(s), none applied): " + e.getMessage());
        if (e instanceof NftException.PermissionDenied) {
          throw new DataplaneException(e.getMessage(), e);
        }
      }
      kernel += System.nanoTime() - t;
    }

    if (!changes.srcValidMark().isEmpty()) {
      t = System.nanoTime();
      List<Change> sysctlChanges = nftChanges.stream().filter(c -> c.kind() == Change.Kind.SYSCTL).toList();
      int i = 0;
      for (Map.Entry<String, Integer> dev : new TreeMap<>(changes.srcValidMark()).entrySet()) {
        Optional<String> failure = ReversePath.enableSrcValidMark(netlink, dev.getKey(), dev.getValue());
        if (failure.isPresent()) {
          failures.add(failure.get());
        } else if (i < sysctlChanges.size()) {
          applied.add(sysctlChanges.get(i));
        }
        i++;
      }
      kernel += System.nanoTime() - t;
    }

    if (!changes.markCommands().isEmpty()) {
      t = System.nanoTime();
      List<Change> markChanges = nftChanges.stream().filter(c -> c.kind() == Change.Kind.MARK).toList();
      try {
        List<MarkNftables.Refusal> refused = List.of();
        if (known.isPresent()) {
          marks.runKnown(changes.markCommands(), known.get().marksRemoved(), known.get().marksAdded());
          nft.marksCommitted();
        } else {
          refused = marks.runInBatches(changes.markCommands(), changes.markOutcome(), nft::marksCommitted);
        }
        Set<String> refusedSources = new HashSet<>();
        for (MarkNftables.Refusal r : refused) {
          refusedSources.add(r.source());
          failures.add("nft element mark " + r.source() + ": " + r.reason());
        }
        applied.addAll(refusedSources.isEmpty() ? markChanges : markChanges.stream()
            .filter(c -> !(c.op() == Change.Op.ADD && c.description().startsWith("mark ")
                && refusedSources.contains(c.description().substring(5).split(" ")[0])))
            .toList());
      } catch (NftException e) {
        failures.add("nft mark transaction (" + markChanges.size() + " change(s), none applied): " + e.getMessage());
        if (e instanceof NftException.PermissionDenied) {
          throw new DataplaneException(e.getMessage(), e);
        }
      }
      kernel += System.nanoTime() - t;
    }

    t = System.nanoTime();
    // The switched sources' entries are found before the rule deletions and deleted right after them: the dumps
    // walk the whole conntrack table (tens of milliseconds on a loaded node), and every millisecond between the
    // deletion and the restart is a dropped packet of a steady stream (its old NAT no longer fits its route).
    boolean restartEarly = !early.sources().isEmpty() && failures.isEmpty();
    Optional<ConntrackRestarts.Found> found = restartEarly ? Optional.of(restarts.findEarly(early)) : Optional.empty();
    batch(changes.ruleDeletes().stream().map(RuleChange::delete).toList(), ruleChanges, applied, failures, null, true);
    batch(shadowed, ruleChanges, applied, failures, null, true);
    found.ifPresent(restarts::deleteEarly);
    draining.ifPresent(d -> restarts.drainFlows(d, early.inCluster(), !restartEarly));
    routeBatch(changes.routeDeletes().stream().map(RouteChange::delete).toList(), routeDeleteChanges, applied,
        failures);
    if (!changes.steering().isEmpty()) {
      steering.applyAfter(changes.steering(), failures, applied);
    }
    kernel += System.nanoTime() - t;
    return new ApplyReport(applied, failures, kernel);
  }

  /** {@code described} holds the description of each request, in the same order. */
  void routeBatch(List<RouteChange> requests, List<Change> described, List<Change> applied,
      List<String> failures) {
    if (requests.isEmpty()) {
      return;
    }
    Map<RouteChange, Change> byRequest = new HashMap<>();
    for (int i = 0; i < requests.size(); i++) {
      byRequest.put(requests.get(i), described.get(i));
    }
    BatchResult<RouteChange> result = netlink.applyRoutes(requests);
    for (RouteChange ok : result.succeeded()) {
      applied.add(byRequest.get(ok));
      conflicts.remove(ok.route());
    }
    for (BatchResult.Failure<RouteChange> f : result.failed()) {
      if (f.change().op() == RouteChange.Op.DELETE && f.error() instanceof NetlinkException.NotFound) {
        applied.add(byRequest.get(f.change())); // already gone: the goal is met
        continue;
      }
      if (f.error() instanceof NetlinkException.PermissionDenied) {
        throw new DataplaneException(f.error().getMessage(), f.error());
      }
      if (f.change().op() == RouteChange.Op.ADD && f.error() instanceof NetlinkException.AlreadyExists) {
        // Not ours (ours would have been observed): someone else's route to that destination, which the
        // admin meant for the table's users. Left alone and said once; not a failure, so readiness holds.
        if (conflicts.add(f.change().route())) {
          String destination = f.change().route().destination().map(Object::toString).orElse("default");
          LOG.warn("{}: table {} already has a route to {} that is not the agent's;"
              + " left alone, so the service's traffic to {} follows it instead of being thrown back",
              describe(), Integer.toUnsignedString(f.change().route().table()), destination, destination);
        }
        continue;
      }
      failures.add(f.error().getMessage());
    }
  }

  /**
   * @param alreadyExists where adds refused as duplicates go, to be tried again after the deletes; null:
   *     such an add counts as done
   */
  void batch(List<RuleChange> requests, Map<Rule, Change> described, List<Change> applied,
      List<String> failures, List<RuleChange> alreadyExists, boolean exclusive) {
    if (requests.isEmpty()) {
      return;
    }
    BatchResult<RuleChange> result = netlink.apply(requests, exclusive);
    for (RuleChange ok : result.succeeded()) {
      applied.add(described.get(ok.rule()));
    }
    for (BatchResult.Failure<RuleChange> f : result.failed()) {
      if (f.change().op() == RuleChange.Op.DELETE && f.error() instanceof NetlinkException.NotFound) {
        applied.add(described.get(f.change().rule())); // already gone: the goal is met
        continue;
      }
      if (f.change().op() == RuleChange.Op.ADD && f.error() instanceof NetlinkException.AlreadyExists) {
        if (alreadyExists != null) {
          alreadyExists.add(f.change());
        } else {
          applied.add(described.get(f.change().rule()));
        }
        continue;
      }
      if (f.error() instanceof NetlinkException.PermissionDenied) {
        throw new DataplaneException(f.error().getMessage(), f.error());
      }
      failures.add(f.error().getMessage());
    }
  }
}

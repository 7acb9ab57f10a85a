package io.egressservice.dataplane;

import io.egressservice.kernel.Flows;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.SteerRoute;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Supplier;

/**
 * Which flows start over when their endpoints' treatment changes, and when. A flow keeps the NAT its first packet
 * chose, so until its conntrack entry goes, a flow that was steered leaves the new host's uplink with the identity
 * NAT and the no-host guard drops it: restarted after the whole reconcile (route deletions, the no-host table), a
 * planned move lost 14-69 datagrams of a 2 ms stream there. So the sources now SNATed or steered restart early,
 * right after the rule deletions ({@link #findEarly}, {@link #deleteEarly}), and again in the later pass after the
 * reconcile ({@link #afterFullReconcile}, {@link #afterChanged}): a packet routed by the old rule just before its
 * deletion has an entry not yet confirmed, which a delete misses and which would keep the old NAT (the flow dropped
 * for good). Held and released sources restart only in the later pass, once the no-host table holds them (earlier
 * they would leak). A restarted agent leaves running flows alone: nothing restarts before its first reconcile.
 */
final class FlowRestarts {
  /** At most this many rounds of {@link #drainFlows}, this far apart: a packet crosses a node in microseconds. */
  private static final int DRAIN_ROUNDS = 5;
  private static final long DRAIN_ROUND_MILLIS = 5;

  private final TunnelGuard guard;
  private final FlowDrain drain;
  /** The marks the kernel holds, by table: a drain's mark must be none of them. */
  private final Supplier<Map<Long, Long>> knownMarks;
  /** Restarts the flows of changed endpoints (and keeps what it learned of the kernel across reconciles). */
  private final ConntrackRestarts conntrack;
  /** How each local endpoint's traffic leaves, as last applied; null before the first reconcile. */
  private Map<IpPrefix, String> lastTreatment;
  /** The steering tables' routes as last applied with {@link #lastTreatment}: where a switched source was steered. */
  private List<SteerRoute> lastSteerRoutes = List.of();
  /** What the early restart in {@code apply} could not do; reported with the later pass's. */
  private final List<String> earlyFailures = new ArrayList<>();
  /** What the early restarts deleted since the last later pass, whose takeovers that pass deletes again. */
  private final List<ConntrackRestarts.Found> earlyFound = new ArrayList<>();

  /**
   * Sources whose flows out of the cluster restart right after the rule deletions, what is in the cluster, and those
   * of them whose established flows stay on their old host meanwhile ({@link FlowDrain}).
   */
  record EarlyRestart(Set<IpPrefix> sources, List<IpPrefix> inCluster, FlowDrain.Plan drain) {
    static final EarlyRestart NONE = new EarlyRestart(Set.of(), List.of(), FlowDrain.Plan.NONE);
  }

  FlowRestarts(Flows flows, TunnelGuard guard, FlowDrain drain, Supplier<Map<Long, Long>> knownMarks) {
    this.conntrack = new ConntrackRestarts(flows);
    this.guard = guard;
    this.drain = drain;
    this.knownMarks = knownMarks;
  }

  /** Whether a reconcile has run (the treatments are known). */
  boolean started() {
    return lastTreatment != null;
  }

  /** The early restart of a full reconcile to {@code desired}: none on the first one (running flows stay). */
  EarlyRestart forFullReconcile(DesiredState desired) {
    return lastTreatment == null ? EarlyRestart.NONE
        : switchedSources(lastTreatment, ServiceSlices.treatments(desired), lastSteerRoutes, desired);
  }

  /**
   * The early restart of the fast path from the changed services' slice {@code was} to {@code now}; {@code previous}
   * was applied in full and {@code next} is the whole desired state {@code now} belongs to.
   */
  EarlyRestart forChanged(DesiredState was, DesiredState now, DesiredState previous, DesiredState next) {
    return switchedSources(ServiceSlices.treatments(was), ServiceSlices.treatments(now),
        previous.steering().routes(), next);
  }

  /**
   * @param steeredBefore the steering routes when {@code before} was applied (where a source was steered)
   * @param next the whole desired state {@code after} belongs to
   */
  private EarlyRestart switchedSources(Map<IpPrefix, String> before, Map<IpPrefix, String> after,
      List<SteerRoute> steeredBefore, DesiredState next) {
    earlyFailures.clear();
    TreeSet<IpPrefix> switched = new TreeSet<>();
    after.forEach((k, v) -> {
      if ((v.startsWith("snat ") || v.startsWith("steer ")) && !v.equals(before.get(k))) {
        switched.add(k);
      }
    });
    return new EarlyRestart(switched, next.inCluster(), drainPlan(switched, before, after, steeredBefore, next));
  }

  /**
   * The switched sources that were steered and are SNATed here now (this node became their host): their flows keep
   * the old host's steering table until their entries are gone. Not when that table now routes to another host (the
   * flows would go there), nor when every mark value of the mask is taken.
   */
  private FlowDrain.Plan drainPlan(Set<IpPrefix> switched, Map<IpPrefix, String> before, Map<IpPrefix, String> after,
      List<SteerRoute> steeredBefore, DesiredState next) {
    Map<Long, String> nowRoutedTo = new HashMap<>();
    next.steering().routes().forEach(r -> nowRoutedTo.put(r.table(), r.host()));
    List<FlowDrain.Entry> entries = new ArrayList<>();
    for (IpPrefix source : switched) {
      String was = before.getOrDefault(source, "");
      if (!was.startsWith("steer ") || !after.get(source).startsWith("snat ")) {
        continue;
      }
      String oldHost = was.substring("steer ".length());
      steeredBefore.stream().filter(r -> r.host().equals(oldHost) && r.family() == source.family())
          .filter(r -> nowRoutedTo.getOrDefault(r.table(), oldHost).equals(oldHost)).findFirst()
          .ifPresent(r -> entries.add(new FlowDrain.Entry(source, r.table())));
    }
    if (entries.isEmpty()) {
      return FlowDrain.Plan.NONE;
    }
    Set<Long> used = new HashSet<>(next.networkMarks().values());
    used.addAll(knownMarks.get().values());
    return FlowDrain.freeMark(next.markMask(), used).map(v -> new FlowDrain.Plan(entries, next.markMask(), v))
        .orElse(FlowDrain.Plan.NONE);
  }

  /** Before the nft transactions: the drain's rules and marks, when it has sources. */
  Optional<FlowDrain.Active> beginDrain(EarlyRestart early) {
    return drain.begin(early.drain());
  }

  /**
   * Before the rule deletions: the switched sources' new inbound flows held and their entries found. The dumps walk
   * the whole conntrack table (tens of milliseconds on a loaded node), and every millisecond between the deletion and
   * the restart is a dropped packet of a steady stream (its old NAT no longer fits its route).
   */
  ConntrackRestarts.Found findEarly(EarlyRestart early) {
    guard.holdNewInbound(early.sources());
    return conntrack.find(early.sources(), early.inCluster());
  }

  /** Right after the rule deletions: the entries {@link #findEarly} found go. */
  void deleteEarly(ConntrackRestarts.Found found) {
    earlyFailures.addAll(conntrack.delete(found));
    earlyFound.add(found);
  }

  /**
   * Deletes the drained sources' entries without SNAT (their flows before the switch, steered meanwhile) until a round
   * finds none, then ends the drain: first the entries, then the rule, so no packet of theirs falls between. The
   * rounds catch an entry the earlier find missed: one made between that find and the rule deletion, or not yet
   * confirmed when a dump walked past it.
   */
  void drainFlows(FlowDrain.Active active, List<IpPrefix> inCluster, boolean hold) {
    Set<IpPrefix> sources = active.plan().sources();
    if (hold) {
      guard.holdNewInbound(sources); // not held with the early restart (a failure before it): see holdNewInbound
    }
    try {
      for (int round = 0; round < DRAIN_ROUNDS; round++) {
        if (round > 0) {
          Thread.sleep(DRAIN_ROUND_MILLIS);
        }
        ConntrackRestarts.Found f = conntrack.find(sources, inCluster).withoutSnat();
        if (f.size() > 0) {
          earlyFailures.addAll(conntrack.delete(f));
          earlyFound.add(f);
        } else if (round > 0) {
          break;
        }
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } finally {
      earlyFailures.addAll(drain.end(active));
    }
  }

  /**
   * The later pass of a full reconcile that applied {@code desired}: deletes the conntrack entries of the endpoints
   * whose treatment changed since the last reconcile (not on the first one: a restarted agent leaves running flows
   * alone), so their flows start over with the new one. Only their flows out of the cluster: their flows to pods,
   * services and nodes never changed treatment.
   */
  void afterFullReconcile(DesiredState desired, List<String> failures) {
    Map<IpPrefix, String> now = ServiceSlices.treatments(desired);
    Map<IpPrefix, String> before = lastTreatment;
    lastTreatment = now;
    lastSteerRoutes = desired.steering().routes();
    if (before == null) {
      return;
    }
    TreeSet<IpPrefix> changed = new TreeSet<>();
    now.forEach((k, v) -> {
      if (!v.equals(before.get(k))) {
        changed.add(k);
      }
    });
    before.keySet().stream().filter(k -> !now.containsKey(k)).forEach(changed::add);
    failures.addAll(earlyFailures);
    earlyFailures.clear();
    guard.holdNewInbound(changed);
    failures.addAll(conntrack.restartFlowsLeavingTheCluster(changed, desired.inCluster()));
    deleteTakeovers(failures);
  }

  /**
   * {@link #afterFullReconcile} for the sources of the changed services only (the fast path from {@code was} to
   * {@code now}, slices of {@code next}).
   */
  void afterChanged(DesiredState was, DesiredState now, DesiredState next, List<String> failures) {
    Map<IpPrefix, String> before = ServiceSlices.treatments(was);
    Map<IpPrefix, String> after = ServiceSlices.treatments(now);
    TreeSet<IpPrefix> changedSources = new TreeSet<>();
    after.forEach((k, v) -> {
      if (!v.equals(before.get(k))) {
        changedSources.add(k);
      }
    });
    before.keySet().stream().filter(k -> !after.containsKey(k)).forEach(changedSources::add);
    before.keySet().forEach(lastTreatment::remove);
    lastTreatment.putAll(after);
    failures.addAll(earlyFailures);
    earlyFailures.clear();
    guard.holdNewInbound(changedSources);
    failures.addAll(conntrack.restartFlowsLeavingTheCluster(changedSources, now.inCluster()));
    deleteTakeovers(failures);
    lastSteerRoutes = next.steering().routes();
  }

  /** The later pass's end: see {@link ConntrackRestarts#deleteTakeovers}. */
  private void deleteTakeovers(List<String> failures) {
    earlyFound.forEach(f -> failures.addAll(conntrack.deleteTakeovers(f)));
    earlyFound.clear();
  }
}

package io.egressservice.controller;

import io.egressservice.plan.DesiredState;
import io.egressservice.plan.ObjectRef;
import io.egressservice.plan.ServiceOutcome;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

/**
 * Turns the plan's outcomes into Events, only when an outcome on this node changes (never one per
 * resync). Cluster-wide reasons (no Service, not allocated, handled by another node) are not this
 * node's to report: every node would say the same; the allocator reports those.
 */
final class OutcomeReporter {
  private final EventSink sink;
  private final String node;
  /**
   * Per service, the last outcome and the snapshot made from it: an unchanged outcome (most of them,
   * most times) is not re-derived.
   */
  private final Map<ObjectRef, Reported> last = new HashMap<>();

  /** What an Event depends on; equal snapshots emit nothing. */
  private record Snapshot(boolean configured, String reason, List<String> skipped, List<String> remote,
      List<String> steeredTo) {}

  private record Reported(ServiceOutcome outcome, Snapshot snapshot) {}

  OutcomeReporter(EventSink sink, String node) {
    this.sink = sink;
    this.node = node;
  }

  void report(DesiredState state) {
    Map<ObjectRef, Reported> now = new HashMap<>();
    for (ServiceOutcome o : state.services()) {
      Reported before = last.get(o.service());
      if (before != null && sameOutcome(before.outcome(), o)) {
        now.put(o.service(), new Reported(o, before.snapshot()));
        continue;
      }
      Snapshot s = new Snapshot(o.configured(), withoutCounts(o.reason()),
          o.skippedEndpoints().stream().map(e -> e.address() + " (" + e.reason() + ")").sorted().toList(),
          o.remoteEndpoints().stream().sorted().toList(),
          o.steeredEndpoints().stream().map(e -> e.host() + " (" + e.hostAddress() + ")").distinct().sorted().toList());
      now.put(o.service(), new Reported(o, s));
      Snapshot previous = before == null ? null : before.snapshot();
      if (Objects.equals(previous, s)) {
        continue;
      }
      emitChange(o.service(), previous, s);
    }
    last.clear();
    last.putAll(now);
  }

  private static boolean sameOutcome(ServiceOutcome a, ServiceOutcome b) {
    return a.configured() == b.configured() && a.reason().equals(b.reason())
        && a.skippedEndpoints().equals(b.skippedEndpoints()) && a.remoteEndpoints().equals(b.remoteEndpoints())
        && a.steeredEndpoints().equals(b.steeredEndpoints());
  }

  private void emitChange(ObjectRef es, Snapshot before, Snapshot now) {
    boolean wasConfigured = before != null && before.configured();
    boolean steering = !now.steeredTo().isEmpty();
    if (steering && (before == null || !now.steeredTo().equals(before.steeredTo()))) {
      // Once per change of where this node steers (host or its addresses), not per endpoint added or removed.
      sink.emit(es, "Normal", "EndpointsSteered", "node " + node + " steers its endpoints of this service to host "
          + String.join(", ", now.steeredTo()) + " over " + io.egressservice.plan.SteeringPlan.DEVICE
          + ", where they leave with the LoadBalancer IP");
    } else if (steering) {
      // the same hosts: nothing new to say
    } else if (now.configured() && (!wasConfigured || !now.reason().equals(before.reason()))) {
      sink.emit(es, "Normal", "EgressConfigured", "configured on node " + node + ": " + now.reason());
    } else if (!now.configured() && isSteeringFailure(now.reason())
        && (before == null || !now.reason().equals(before.reason()))) {
      sink.emit(es, "Warning", "SteeringUnavailable", "on node " + node + ": " + now.reason());
    } else if (!now.configured() && wasConfigured) {
      sink.emit(es, "Normal", "EgressRemoved", "no longer configured on node " + node + ": " + now.reason());
    } else if (!now.configured() && isNodeLocalFailure(now.reason())
        && (before == null || !now.reason().equals(before.reason()))) {
      sink.emit(es, "Warning", failureReason(now.reason()), "on node " + node + ": " + now.reason());
    }
    boolean acting = now.configured() || isNodeLocalFailure(now.reason()) || isSteeringFailure(now.reason());
    if (acting && !now.skipped().isEmpty() && (before == null || !now.skipped().equals(before.skipped()))) {
      sink.emit(es, "Warning", "EndpointsRefused", "node " + node + " refuses " + now.skipped().size()
          + " endpoint(s): " + summarize(now.skipped()));
    }
    if (now.configured() && !now.remote().isEmpty() && (before == null || !now.remote().equals(before.remote()))) {
      sink.emit(es, "Warning", "EndpointsNotOnHost", now.remote().size() + " endpoint(s) are not on host node "
          + node + " and not steered here; their egress uses the service's SNAT and network only if the pod network"
          + " brings it here: " + summarize(now.remote()));
    }
  }

  private static final java.util.regex.Pattern COUNT = java.util.regex.Pattern.compile("\\b\\d+ (endpoint|source)");

  /** Endpoint counts change with every scale event; they are not an outcome change worth an Event. */
  private static String withoutCounts(String reason) {
    return COUNT.matcher(reason).replaceAll("N $1"); // compiled once: this runs per service per reconcile
  }

  /** This node has endpoints it cannot steer (the host lacks an InternalIP of the family, no free table). */
  private static boolean isSteeringFailure(String reason) {
    return reason.startsWith(io.egressservice.plan.Planner.NOT_STEERED);
  }

  /**
   * Failures only the node acting for the service states (its network, the LB IP it would SNAT to, a plan
   * that failed for this service), so each is reported once, by that node.
   */
  private static boolean isNodeLocalFailure(String reason) {
    return reason.startsWith("network '") || reason.startsWith(LB_IP_REFUSED) || reason.startsWith(PLAN_FAILED);
  }

  private static final String LB_IP_REFUSED = "LoadBalancer ingress IP ";
  private static final String PLAN_FAILED = "planning this service failed";

  private static String failureReason(String reason) {
    return reason.startsWith(LB_IP_REFUSED) ? "LoadBalancerIPRefused"
        : reason.startsWith(PLAN_FAILED) ? "PlanFailed" : "NetworkNotFound";
  }

  private static String summarize(List<String> items) {
    String head = items.stream().limit(5).collect(Collectors.joining(", "));
    return items.size() > 5 ? head + " and " + (items.size() - 5) + " more" : head;
  }
}

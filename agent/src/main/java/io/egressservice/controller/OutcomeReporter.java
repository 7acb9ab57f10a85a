package io.egressservice.controller;

import io.egressservice.logging.LogKeys;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceOutcome;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Turns the plan's outcomes into Events, only when an outcome on this node changes (never one per
 * resync, nor one per restart). What this node says about a service is kept per {@link Channel}: its
 * outcome, its refused endpoints, its endpoints off the host. An Event is written when what a channel
 * says changes (counts aside). The memory starts from the API: until the {@link EventRecorder} has read
 * this node's earlier Events ({@link #seeded}), outcomes are held, then reported against them.
 *
 * <p>Cluster-wide reasons (no Service, not allocated, handled by another node) are not this node's to
 * report: every node would say the same; the allocator reports those. This node says only that it
 * stopped ({@code EgressRemoved}) after it had said it was configured.
 *
 * <p>Each Event is logged as it is handed on (a Warning at warn, else info), with the service's {@code namespace} and
 * {@code service} and this {@code node} as keys ({@link LogKeys}): what the Event says is in the log even where
 * Events are not kept, and a log pipeline finds one service's story by its keys.
 */
final class OutcomeReporter {
  /** Under the agent's name, like the reconcile log: what an operator greps the agent's lines for. */
  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);

  static final String CONFIGURED = "EgressConfigured";
  static final String REMOVED = "EgressRemoved";
  static final String NETWORK_NOT_FOUND = "NetworkNotFound";
  static final String LB_IP_REFUSED_EVENT = "LoadBalancerIPRefused";
  static final String PLAN_FAILED_EVENT = "PlanFailed";
  static final String REFUSED = "EndpointsRefused";
  static final String NOT_ON_HOST = "EndpointsNotOnHost";
  static final String STEERED = "EndpointsSteered";
  static final String STEERING_UNAVAILABLE = "SteeringUnavailable";
  /** Configured, but the pod network of a family its endpoints use is unknown (in-cluster traffic is not exempted). */
  static final String POD_NETWORK_UNKNOWN = "PodNetworkUnknown";
  /**
   * Configured, but its network's table has no route of a family it uses on this node (that traffic falls through
   * to the next rule, usually the main table).
   */
  static final String NETWORK_HAS_NO_ROUTE = "NetworkHasNoRoute";
  /** The warnings this node gave about a configured service no longer hold. */
  static final String WARNING_RESOLVED = "WarningResolved";
  /** Mark mode: the node's marks ran out for the service (oldest first, or its namespace's limit): nothing applied. */
  static final String MARK_UNAVAILABLE = "MarkUnavailable";

  /** What the node says something about, one Event at a time. */
  enum Channel {
    OUTCOME, REFUSED_ENDPOINTS, REMOTE_ENDPOINTS, WARNINGS;

    static Optional<Channel> of(String reason) {
      return switch (reason) {
        case CONFIGURED, REMOVED, NETWORK_NOT_FOUND, LB_IP_REFUSED_EVENT, PLAN_FAILED_EVENT, STEERED, STEERING_UNAVAILABLE,
            MARK_UNAVAILABLE ->
          Optional.of(OUTCOME);
        case REFUSED -> Optional.of(REFUSED_ENDPOINTS);
        case NOT_ON_HOST -> Optional.of(REMOTE_ENDPOINTS);
        case POD_NETWORK_UNKNOWN, NETWORK_HAS_NO_ROUTE, WARNING_RESOLVED -> Optional.of(WARNINGS);
        default -> Optional.empty();
      };
    }
  }

  /** Where the reporter's Events go: the {@link EventRecorder}, or straight to a sink. */
  interface Recorder {
    void record(Channel channel, EventRecord e);
  }

  private final Recorder recorder;
  private final String node;
  /** Per service, the outcome last seen (null: none yet) and what each channel last said. */
  private Map<ObjectRef, State> last = new HashMap<>();
  /** What the API showed this node had said, for services not seen since (null until read). */
  private Map<ObjectRef, EnumMap<Channel, EventRecord>> earlier;
  private List<ServiceOutcome> held;

  private record State(ServiceOutcome outcome, EnumMap<Channel, EventRecord> said) {}

  OutcomeReporter(Recorder recorder, String node) {
    this.recorder = recorder;
    this.node = node;
  }

  /** Straight to {@code sink}, with nothing said before (for tests of what is said when). */
  OutcomeReporter(EventSink sink, String node) {
    this((ch, e) -> sink.emit(e.object(), e.type(), e.reason(), e.message()), node);
    seeded(Map.of());
  }

  synchronized void report(DesiredState state) {
    if (earlier == null) {
      held = state.services();
      return;
    }
    process(state.services());
  }

  /**
   * An incremental plan: only the outcomes of {@code changed} services can differ from the last report ({@code
   * outcomes} holds those that still exist), so only they are compared: O(changed), not O(services).
   */
  synchronized void reportChanged(DesiredState state, Set<ObjectRef> changed, Map<ObjectRef, ServiceOutcome> outcomes) {
    if (earlier == null) {
      held = state.services(); // a view of the plan: holding it copies nothing
      return;
    }
    for (ObjectRef ref : changed) {
      ServiceOutcome o = outcomes.get(ref);
      if (o == null) {
        last.remove(ref);
      } else {
        State now = processOne(o, last.get(ref));
        last.put(ref, now);
      }
    }
  }

  /** What this node's Events said last, per service and channel; reports what was held meanwhile. */
  synchronized void seeded(Map<ObjectRef, EnumMap<Channel, EventRecord>> lastSaid) {
    earlier = new HashMap<>(lastSaid);
    if (held != null) {
      process(held);
      held = null;
    }
  }

  private void process(List<ServiceOutcome> outcomes) {
    Map<ObjectRef, State> now = new HashMap<>();
    for (ServiceOutcome o : outcomes) {
      now.put(o.service(), processOne(o, last.get(o.service())));
    }
    last = now;
  }

  private State processOne(ServiceOutcome o, State before) {
    if (before == null) {
      EnumMap<Channel, EventRecord> said = earlier.remove(o.service());
      before = new State(null, said == null ? new EnumMap<>(Channel.class) : said);
    } else if (sameOutcome(before.outcome(), o)) {
      return before;
    }
    EnumMap<Channel, EventRecord> said = new EnumMap<>(Channel.class);
    for (Channel ch : Channel.values()) {
      EventRecord previous = before.said().get(ch);
      EventRecord wanted = wanted(ch, o, previous);
      if (wanted == null) {
        continue;
      }
      if (!wanted.sameAs(previous)) {
        recorder.record(ch, wanted);
        log(wanted);
        said.put(ch, wanted);
      } else {
        said.put(ch, previous);
      }
    }
    return new State(o, said);
  }

  private static boolean sameOutcome(ServiceOutcome a, ServiceOutcome b) {
    return a.configured() == b.configured() && a.reason().equals(b.reason())
        && a.skippedEndpoints().equals(b.skippedEndpoints()) && a.remoteEndpoints().equals(b.remoteEndpoints())
        && a.steeredEndpoints().equals(b.steeredEndpoints()) && a.warnings().equals(b.warnings());
  }

  private void log(EventRecord e) {
    LogKeys.service(e.type().equals("Warning") ? LOG.atWarn() : LOG.atInfo(), e.object().namespace(), e.object().name())
        .addKeyValue(LogKeys.NODE, node).log("{} {}: {}", e.reason(), e.object(), e.message());
  }

  /** What {@code ch} should say now; null: nothing (a later change is then news again). */
  private EventRecord wanted(Channel ch, ServiceOutcome o, EventRecord previous) {
    ObjectRef es = o.service();
    boolean networkMissing = isNodeLocalFailure(o.reason());
    boolean steeringFailed = !o.configured() && isSteeringFailure(o.reason());
    List<String> steeredTo = o.steeredEndpoints().stream().map(e -> e.host() + " (" + e.hostAddress() + ")")
        .distinct().sorted().toList();
    return switch (ch) {
      case OUTCOME -> {
        if (!steeredTo.isEmpty()) {
          // once per change of where this node steers (host or its addresses), not per endpoint added or removed
          yield new EventRecord(es, "Normal", STEERED, "node " + node + " steers its endpoints of this service to host "
              + String.join(", ", steeredTo) + " over " + io.egressservice.plan.SteeringPlan.DEVICE
              + ", where they leave with the LoadBalancer IP");
        }
        if (o.configured()) {
          yield new EventRecord(es, "Normal", CONFIGURED, "configured on node " + node + ": " + o.reason());
        }
        if (networkMissing) {
          // also when it was configured: the user's cue is the missing network, not that egress stopped
          yield new EventRecord(es, "Warning", failureReason(o.reason()), "on node " + node + ": " + o.reason());
        }
        if (steeringFailed) {
          yield new EventRecord(es, "Warning", STEERING_UNAVAILABLE, "on node " + node + ": " + o.reason());
        }
        if (previous != null && (previous.reason().equals(CONFIGURED) || previous.reason().equals(STEERED))) {
          yield new EventRecord(es, "Normal", REMOVED, "no longer configured on node " + node + ": " + o.reason());
        }
        yield previous != null && previous.reason().equals(REMOVED) ? previous : null;
      }
      case REFUSED_ENDPOINTS -> {
        List<String> skipped = o.skippedEndpoints().stream().map(e -> e.address() + " (" + e.reason() + ")").sorted().toList();
        yield (o.configured() || networkMissing || steeringFailed) && !skipped.isEmpty()
            ? new EventRecord(es, "Warning", REFUSED, "node " + node + " refuses " + skipped.size() + " endpoint(s): "
                + summarize(skipped))
            : null;
      }
      case REMOTE_ENDPOINTS -> {
        List<String> remote = o.remoteEndpoints().stream().sorted().toList();
        yield o.configured() && !remote.isEmpty()
            ? new EventRecord(es, "Warning", NOT_ON_HOST, remote.size() + " endpoint(s) are not on host node " + node
                + " and not steered here; their egress uses the service's SNAT and network only if the pod network"
                + " brings it here: " + summarize(remote))
            : null;
      }
      case WARNINGS -> {
        if (o.configured() && !o.warnings().isEmpty()) {
          yield new EventRecord(es, "Warning", warningReason(o.warnings().get(0)), "on node " + node + ": "
              + String.join("; ", o.warnings()));
        }
        // a Normal Event after the Warning, so that explain and status no longer show it as in force
        yield previous != null && previous.type().equals("Warning")
            ? new EventRecord(es, "Normal", WARNING_RESOLVED, "on node " + node + ": resolved: "
                + previous.message().substring(Math.min(previous.message().length(), ("on node " + node + ": ").length())))
            : previous != null && previous.reason().equals(WARNING_RESOLVED) ? previous : null;
      }
    };
  }

  /** The reason of the WARNINGS channel's Event: that of its first warning (the message holds them all). */
  private static String warningReason(String warning) {
    return io.egressservice.plan.NoRouteWarning.is(warning) ? NETWORK_HAS_NO_ROUTE : POD_NETWORK_UNKNOWN;
  }

  /** This node has endpoints it cannot steer (the host lacks an InternalIP of the family, no free table). */
  private static boolean isSteeringFailure(String reason) {
    return reason.startsWith(io.egressservice.plan.Planner.NOT_STEERED);
  }

  /**
   * Failures only the node acting for the service states (its network, the LB IP it would SNAT to, a plan
   * that failed for this service, the marks it needs on this node), so each is reported once, by that node.
   */
  private static boolean isNodeLocalFailure(String reason) {
    return reason.startsWith("network '") || reason.startsWith(LB_IP_REFUSED) || reason.startsWith(PLAN_FAILED)
        || reason.startsWith(io.egressservice.plan.Planner.NO_FREE_MARK);
  }

  private static final String LB_IP_REFUSED = "LoadBalancer ingress IP ";
  private static final String PLAN_FAILED = "planning this service failed";

  private static String failureReason(String reason) {
    return reason.startsWith(LB_IP_REFUSED) ? LB_IP_REFUSED_EVENT
        : reason.startsWith(PLAN_FAILED) ? PLAN_FAILED_EVENT
        : reason.startsWith(io.egressservice.plan.Planner.NO_FREE_MARK) ? MARK_UNAVAILABLE : NETWORK_NOT_FOUND;
  }

  private static String summarize(List<String> items) {
    String head = items.stream().limit(5).collect(Collectors.joining(", "));
    return items.size() > 5 ? head + " and " + (items.size() - 5) + " more" : head;
  }
}

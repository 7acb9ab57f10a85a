package io.egressservice.allocator;

import io.egressservice.logging.LogKeys;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.model.ObjectRef;
import java.time.Instant;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Supplier;
import org.ovn.k8s.v1.EgressService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a pass decided, written and told: each service's {@code status.host} where it differs (a planned move waits
 * for its new host to receive), a log line and an Event when the outcome (host, reason) changes, the host moves and
 * failover times to the metrics and the {@link Allocator.Listener}s. Worker thread only, but for the getters.
 *
 * <p>Events are remembered per leadership term: on taking over, a service whose status is already right gets no
 * Event; after that an Event is written only when host or reason changes, never for a resync.
 */
final class DecisionWriter {
  /** The allocator's logger: operators filter on it, whichever part of the allocator speaks. */
  private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);

  private final String identity;
  private final AllocatorWrites writes;
  private final AllocatorMetrics metrics;
  private final List<Allocator.Listener> listeners;
  private final HostWatch hostWatch;
  private final Supplier<Optional<PlannedMoves>> plannedMoves;
  /** Last reported outcome per service, this term. */
  private final Map<ObjectRef, Outcome> reported = new HashMap<>();
  /** The term {@link #reported} belongs to. */
  private long reportedTerm = -1;
  private final List<Double> failoverSeconds = new CopyOnWriteArrayList<>();
  private final Map<ObjectRef, Long> lastHostChangeEpochSeconds = new ConcurrentHashMap<>();

  private record Outcome(String uid, String host, Reason reason) {}

  DecisionWriter(String identity, AllocatorWrites writes, AllocatorMetrics metrics, List<Allocator.Listener> listeners,
      HostWatch hostWatch, Supplier<Optional<PlannedMoves>> plannedMoves) {
    this.identity = identity;
    this.writes = writes;
    this.metrics = metrics;
    this.listeners = listeners;
    this.hostWatch = hostWatch;
    this.plannedMoves = plannedMoves;
  }

  /** A pass of leadership term {@code term} begins: a new term forgets what was reported. */
  void term(long term) {
    if (term != reportedTerm) {
      reported.clear();
      reportedTerm = term;
    }
  }

  /** Seconds from an unreachable host's last answer to each of its services' new status.host written, in order. */
  List<Double> failoverSeconds() {
    return List.copyOf(failoverSeconds);
  }

  /** When this instance last wrote a different status.host of each service (epoch seconds). */
  Map<ObjectRef, Long> lastHostChange() {
    return Map.copyOf(lastHostChangeEpochSeconds);
  }

  /** Writes and reports what {@code step} decided; {@code full}: it decided every service. */
  void write(IncrementalAllocation.Step step, boolean full, Set<String> unreachable, AllocatorObjects objects,
      IncrementalAllocation allocation) {
    Map<String, NodeState> nodeByName = allocation.nodesByName();
    Optional<PlannedMoves> plannedMoves = this.plannedMoves.get();
    for (Decision d : step.evaluated()) {
      EgressService es = objects.egressService(d.ref()).orElseThrow();
      EgressServiceState state = allocation.inputs(d.ref()).orElseThrow().egressService();
      String oldHost = es.getStatus() == null || es.getStatus().getHost() == null ? "" : es.getStatus().getHost();
      // A malformed object's spec was never read: writing it back (the status update sends the whole object)
      // could only lose it. It is reported, not written.
      boolean statusOk = d.reason() == Reason.MALFORMED
          || es.getStatus() != null && d.host().equals(es.getStatus().getHost());
      if (!statusOk && plannedMoves.isPresent()
          && !plannedMoves.get().mayWrite(es, oldHost, d.host(), nodeByName, unreachable)) {
        continue; // a planned move waits for the new host to receive (PlannedMoves); reported once written
      }
      plannedMoves.filter(m -> statusOk).ifPresent(m -> m.settled(es));
      String move = "";
      if (!statusOk && writes.writeStatus(es, d.host())) {
        move = plannedMoves.flatMap(m -> m.written(es, oldHost, d.host())).orElse("");
        HostMoves.reason(state, d.host(), nodeByName).ifPresent(reason -> {
          metrics.hostMoved(reason);
          LogKeys.service(LOG.atInfo(), d.ref().namespace(), d.ref().name()).addKeyValue(LogKeys.NODE, d.host())
              .log("{}: {} host moved from {} to {} ({})", identity, d.ref(), state.statusHost(), d.host(), reason);
        });
        long epoch = Instant.now().getEpochSecond();
        lastHostChangeEpochSeconds.put(d.ref(), epoch);
        for (Allocator.Listener l : listeners) {
          l.hostChanged(d.ref(), oldHost, d.host(), epoch);
        }
        if (!oldHost.isEmpty() && !oldHost.equals(EgressServiceInfo.HOST_ALL)) {
          move = "moved from node " + oldHost + (unreachable.contains(oldHost)
              ? " (" + HostChooser.AGENT_UNREACHABLE + ")" : " (no longer a candidate)") + ": " + move;
          OptionalLong lost = hostWatch.lostAtNanos(oldHost);
          if (lost.isPresent() && d.reason() == Reason.HOST_ALLOCATED) {
            double seconds = (System.nanoTime() - lost.getAsLong()) / 1e9;
            failoverSeconds.add(seconds);
            for (Allocator.Listener l : listeners) {
              l.failover(d.ref(), oldHost, d.host(), seconds);
            }
          }
        }
      }
      Outcome now = new Outcome(es.getMetadata().getUid(), d.host(), d.reason());
      Outcome before = reported.put(d.ref(), now);
      boolean report = before == null || !Objects.equals(before.uid(), now.uid())
          ? !statusOk || d.reason() == Reason.MALFORMED : !before.equals(now);
      if (report) {
        LogKeys.service(LOG.atInfo(), d.ref().namespace(), d.ref().name()).addKeyValue(LogKeys.NODE, d.host())
            .log("{}: {} host \"{}\" ({}): {}{}", identity, d.ref(), d.host(), d.reason().eventReason(), move,
                d.message());
        writes.event(es, d.reason().allocated() ? "Normal" : "Warning", d.reason().eventReason(), move + d.message());
        d.labelProblem().ifPresent(p -> writes.event(es, "Warning", Reason.LABEL_NOT_SET,
            "node " + d.host() + " is the host but cannot carry the host label: " + p));
      }
      if (!full) {
        metrics.allocation(d.ref().namespace(), d.ref().name(), Optional.of(allocation(d)));
      }
    }
    for (ObjectRef gone : step.removed()) {
      reported.remove(gone);
      lastHostChangeEpochSeconds.remove(gone);
      metrics.allocation(gone.namespace(), gone.name(), Optional.empty());
    }
    if (full) {
      Set<ObjectRef> present = new HashSet<>();
      step.evaluated().forEach(d -> present.add(d.ref()));
      reported.keySet().retainAll(present);
      lastHostChangeEpochSeconds.keySet().retainAll(present);
      metrics.allocations(step.evaluated().stream().map(DecisionWriter::allocation).toList());
    }
  }

  private static AllocatorMetrics.Allocation allocation(Decision d) {
    return new AllocatorMetrics.Allocation(d.ref().namespace(), d.ref().name(), d.host(), d.reason().eventReason());
  }
}

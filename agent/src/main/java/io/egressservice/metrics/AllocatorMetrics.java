package io.egressservice.metrics;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The allocator's Prometheus metrics, {@code egress_service_agent_*} like the node agent's, registered in the
 * registry of the process that runs it (the {@code allocator} Deployment's, or {@code run}'s with
 * {@code --allocator=true}).
 */
public final class AllocatorMetrics {
  /** The reasons a service's host moves, one per test the old host failed ({@code HostChooser}'s order). */
  public static final List<String> MOVE_REASONS = List.of(
      "node_gone", "node_deleting", "node_not_ready", "agent_unreachable", "node_cordoned", "node_selector",
      "no_endpoints");

  private final PrometheusRegistry registry;
  private final Counter hostMoves;
  private final Gauge leader;
  private final Gauge allocation;
  private final Counter passes;
  private final Counter servicesEvaluated;
  private final Gauge selfSuspected;
  private final Counter selfSuspicions;
  private final ProbeMetrics probes;
  /** The allocation series exported now, by service (namespace, name). */
  private final Map<List<String>, Allocation> exported = new HashMap<>();
  private boolean leading;

  /**
   * One EgressService's allocation as the leader last decided it.
   *
   * @param host its {@code status.host}: a node, {@code ALL}, or "" (none)
   * @param reason the Event reason of the decision (HostAllocated, AllNodes, NoHostAvailable, ...)
   */
  public record Allocation(String namespace, String name, String host, String reason) {}

  /** On a registry of its own (tests, and callers that do not expose it). */
  public AllocatorMetrics() {
    this(new PrometheusRegistry());
  }

  public AllocatorMetrics(PrometheusRegistry registry) {
    this.registry = registry;
    hostMoves = Counter.builder()
        .name("egress_service_agent_host_moves_total")
        .help("status.host changes from one node to another (failovers), by why the old host no longer qualified:"
            + " node_gone, node_deleting, node_not_ready, agent_unreachable, node_cordoned, node_selector, no_endpoints.")
        .labelNames("reason")
        .register(registry);
    probes = new ProbeMetrics(registry);
    leader = Gauge.builder()
        .name("egress_service_agent_allocator_leader")
        .help("1 while this process holds the allocator's Lease and writes status.host, else 0.")
        .register(registry);
    leader.set(0);
    allocation = Gauge.builder()
        .name("egress_service_agent_service_allocation")
        .help("1 per EgressService, exported by the leading allocator only: its status.host (a node, ALL, or \"\")"
            + " and the reason of the decision (HostAllocated, AllNodes, NoHostAvailable, ServiceNotFound, ...).")
        .labelNames("service_namespace", "service", "host", "reason")
        .register(registry);
    passes = Counter.builder()
        .name("egress_service_agent_allocator_passes_total")
        .help("Allocation passes of the leader, by kind: full (start of a term, resync, after a failure) or"
            + " incremental (only the EgressServices a change touched).")
        .labelNames("kind")
        .register(registry);
    servicesEvaluated = Counter.builder()
        .name("egress_service_agent_allocator_services_evaluated_total")
        .help("EgressServices whose host the leader decided again, summed over its passes: a change of one"
            + " service's objects re-decides that service only.")
        .register(registry);
    selfSuspected = Gauge.builder()
        .name("egress_service_agent_allocator_self_suspected")
        .help("1 while this allocator replica suspects its own path to the nodes (more than half of the nodes it"
            + " probes, at least 2, fail at once): it keeps every host and drains nothing new; else 0. Every replica"
            + " probes and judges for itself.")
        .register(registry);
    selfSuspected.set(0);
    selfSuspicions = Counter.builder()
        .name("egress_service_agent_allocator_self_suspicions_total")
        .help("Times this allocator replica began suspecting its own path to the nodes.")
        .register(registry);
    passes.labelValues("full");
    passes.labelValues("incremental");
    // Every reason at 0 from the start: the series exist before the first move, so increase() sees it.
    MOVE_REASONS.forEach(hostMoves::labelValues);
  }

  private final java.util.concurrent.atomic.AtomicBoolean pendingWatched = new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * How long the queued allocation pass has waited to start, read at each scrape (every change waits for the next
   * pass; a change that comes while one is queued joins it). Once per registry: later calls do nothing.
   */
  public void pendingWork(java.util.function.DoubleSupplier oldestSeconds) {
    if (!pendingWatched.compareAndSet(false, true)) {
      return;
    }
    io.prometheus.metrics.core.metrics.GaugeWithCallback.builder()
        .name("egress_service_agent_allocator_pending_oldest_seconds")
        .help("Seconds the allocation pass now queued has waited to start (the changes it handles wait as long);"
            + " 0 when none is queued.")
        .callback(cb -> cb.call(oldestSeconds.getAsDouble()))
        .register(registry);
  }

  /** The health probes' unproven answers. */
  public ProbeMetrics probes() {
    return probes;
  }

  public PrometheusRegistry registry() {
    return registry;
  }

  /** One service's host moved from one node to another because the old host failed {@code reason}. */
  public void hostMoved(String reason) {
    hostMoves.labelValues(reason).inc();
  }

  /** Moves counted for {@code reason} so far. */
  public long hostMoves(String reason) {
    return (long) hostMoves.labelValues(reason).get();
  }

  /**
   * After each pass: exactly these allocations are exported, while leading; a pass that ends after leadership
   * was lost exports nothing.
   */
  public synchronized void allocations(List<Allocation> now) {
    Map<List<String>, Allocation> wanted = new HashMap<>();
    if (leading) {
      now.forEach(a -> wanted.put(List.of(a.namespace(), a.name()), a));
    }
    for (List<String> service : new ArrayList<>(exported.keySet())) {
      if (!wanted.containsKey(service)) {
        allocation(service.get(0), service.get(1), Optional.empty());
      }
    }
    wanted.forEach((service, a) -> allocation(a.namespace(), a.name(), Optional.of(a)));
  }

  /**
   * After an incremental pass: the one service's allocation is now {@code now} (empty: the service is gone); the
   * others stay. Nothing is exported while not leading.
   */
  public synchronized void allocation(String namespace, String name, Optional<Allocation> now) {
    List<String> service = List.of(namespace, name);
    Optional<Allocation> wanted = leading ? now : Optional.empty();
    Allocation before = exported.get(service);
    if (before != null && !Optional.of(before).equals(wanted)) {
      allocation.remove(before.namespace(), before.name(), before.host(), before.reason());
      exported.remove(service);
    }
    wanted.ifPresent(a -> {
      allocation.labelValues(a.namespace(), a.name(), a.host(), a.reason()).set(1);
      exported.put(service, a);
    });
  }

  /** One pass of the leader: {@code full} or incremental, that decided {@code evaluated} services again. */
  public void pass(boolean full, int evaluated) {
    passes.labelValues(full ? "full" : "incremental").inc();
    servicesEvaluated.inc(evaluated);
  }

  /** Services decided again so far (all passes). */
  public long servicesEvaluated() {
    return (long) servicesEvaluated.get();
  }

  /** This replica began or ended suspecting its own path to the nodes. */
  public void selfSuspected(boolean suspected) {
    selfSuspected.set(suspected ? 1 : 0);
    if (suspected) {
      selfSuspicions.inc();
    }
  }

  /** Times this replica began suspecting itself. */
  public long selfSuspicions() {
    return (long) selfSuspicions.get();
  }

  public synchronized void leading(boolean leading) {
    this.leading = leading;
    leader.set(leading ? 1 : 0);
    if (!leading) {
      allocations(List.of());
    }
  }
}

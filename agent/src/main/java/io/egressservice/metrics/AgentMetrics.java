package io.egressservice.metrics;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Change;
import io.egressservice.dataplane.ObservedState;
import io.egressservice.ip.IpFamily;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.ServiceOutcome;
import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.Gauge;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.util.Map;
import java.util.stream.Collectors;

/** The agent's Prometheus metrics, all named {@code egress_service_agent_*}, in their own registry. */
public final class AgentMetrics {
  private final PrometheusRegistry registry = new PrometheusRegistry();
  private final Histogram reconcileDuration = Histogram.builder()
      .name("egress_service_agent_reconcile_duration_seconds")
      .help("Time of one reconcile: plan, observe and apply. trigger: what started it: startup (the first),"
          + " api (an informer event that changed a plan input), resync (the periodic full reconcile, --resync),"
          + " kernel (a netlink notification or an nft check found drift), retry (after a failed reconcile).")
      .classicUpperBounds(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10)
      .labelNames("trigger")
      .register(registry);
  private final Histogram servicesPlanned = Histogram.builder()
      .name("egress_service_agent_services_planned")
      .help("EgressServices planned per reconcile: every one in a full plan, only the changed ones (and those sharing"
          + " an endpoint or LoadBalancer IP with them) in an incremental one")
      .classicUpperBounds(0, 1, 2, 5, 10, 50, 100, 500, 1000, 5000, 10000)
      .register(registry);
  private final Counter reconcileErrors = Counter.builder()
      .name("egress_service_agent_reconcile_errors_total")
      .help("Reconciles that failed or were partly refused by the kernel.")
      .register(registry);
  private final Counter changesApplied = Counter.builder()
      .name("egress_service_agent_changes_applied_total")
      .help("Kernel changes applied, by kind (rule, route, snat, in_cluster, nft_base, mark) and op (add, delete, replace).")
      .labelNames("kind", "op")
      .register(registry);
  private final Counter driftRepairs = Counter.builder()
      .name("egress_service_agent_drift_repairs_total")
      .help("Changes applied by reconciles that no API event caused (resync or a kernel change notification).")
      .register(registry);
  private final Gauge ownedRules = Gauge.builder()
      .name("egress_service_agent_owned_rules")
      .help("ip rules the agent owns on this node, by family.")
      .labelNames("family")
      .register(registry);
  private final Gauge ownedRoutes = Gauge.builder()
      .name("egress_service_agent_owned_routes")
      .help("throw routes the agent owns on this node (in-cluster destinations in the service tables), by family.")
      .labelNames("family")
      .register(registry);
  private final Gauge snatEntries = Gauge.builder()
      .name("egress_service_agent_snat_entries")
      .help("SNAT map elements the agent owns on this node, by family.")
      .labelNames("family")
      .register(registry);
  private final Gauge services = Gauge.builder()
      .name("egress_service_agent_services")
      .help("EgressServices by outcome on this node: configured, not_configured.")
      .labelNames("state")
      .register(registry);
  private final Gauge skippedEndpoints = Gauge.builder()
      .name("egress_service_agent_skipped_endpoints")
      .help("Endpoints refused on this node (host-network, malformed, FQDN, claimed by an older service, ...).")
      .register(registry);
  private final Gauge remoteEndpoints = Gauge.builder()
      .name("egress_service_agent_remote_endpoints")
      .help("Counted on the host: LoadBalancerIP endpoints on other nodes that are not steered to it"
          + " (--remote-endpoints=report, or a family the host has no InternalIP of); their egress needs the pod"
          + " network to bring it there.")
      .register(registry);
  private final Gauge steeredEndpoints = Gauge.builder()
      .name("egress_service_agent_steered_endpoints")
      .help("Local endpoints this node steers to their service's host over egress-vx, by family.")
      .labelNames("family")
      .register(registry);
  private final Gauge lastSuccess = Gauge.builder()
      .name("egress_service_agent_last_successful_reconcile_timestamp_seconds")
      .help("Unix time of the last reconcile that applied everything.")
      .register(registry);

  private final Gauge malformedObjects = Gauge.builder()
      .name("egress_service_agent_malformed_objects")
      .help("Objects in the informer caches whose spec cannot be read (they fail the CRD's schema), by kind: each is"
          + " refused on its own.")
      .labelNames("kind")
      .register(registry);

  private final Counter apiEvents = Counter.builder()
      .name("egress_service_agent_api_events_total")
      .help("Informer events received; relevant=\"true\" when they changed something the plan uses for an"
          + " EgressService (only those trigger a reconcile).")
      .labelNames("relevant")
      .register(registry);
  private final Gauge reconcileInterval = Gauge.builder()
      .name("egress_service_agent_reconcile_interval_seconds")
      .help("Current minimum time between reconcile starts: 0.025 s normally, longer while a burst of events lasts.")
      .register(registry);

  private final Counter eventsWritten = Counter.builder()
      .name("egress_service_agent_events_written_total")
      .help("Kubernetes Events written: op=\"create\" a new Event, op=\"patch\" one more occurrence of an earlier one.")
      .labelNames("op")
      .register(registry);
  private final Counter eventsDropped = Counter.builder()
      .name("egress_service_agent_events_dropped_total")
      .help("Events not written, by cause: superseded (a newer outcome of the same service and kind replaced it while"
          + " it waited for the rate limit), queue_full, failed (the API server refused it 3 times), shutdown.")
      .labelNames("cause")
      .register(registry);

  public PrometheusRegistry registry() {
    return registry;
  }

  private final Gauge lastFreshKernelCheck = Gauge.builder()
      .name("egress_service_agent_last_fresh_kernel_check_timestamp_seconds")
      .help("Unix time of the last reconcile that observed the kernel in full and applied everything from a plan"
          + " whose objects were read while every watch was up and the API server answered: the age of what the"
          + " kernel is known to hold against the cluster as it is.")
      .register(registry);
  private final java.util.concurrent.atomic.AtomicBoolean pendingWatched = new java.util.concurrent.atomic.AtomicBoolean();

  /** A full reconcile from fresh objects applied everything at {@code epochSeconds}. */
  public void kernelCheckedFresh(double epochSeconds) {
    lastFreshKernelCheck.set(epochSeconds);
  }

  /**
   * The reconcile work waiting, read at each scrape: how many triggers wait for the next reconcile and how long the
   * oldest has waited. Once per registry: later calls do nothing.
   */
  public void pendingWork(java.util.function.DoubleSupplier triggers, java.util.function.DoubleSupplier oldestSeconds) {
    if (!pendingWatched.compareAndSet(false, true)) {
      return;
    }
    io.prometheus.metrics.core.metrics.GaugeWithCallback.builder()
        .name("egress_service_agent_reconcile_pending_triggers")
        .help("Triggers (API changes, drift, resync, retry) received since the last reconcile began: the next"
            + " reconcile handles them all at once.")
        .callback(cb -> cb.call(triggers.getAsDouble()))
        .register(registry);
    io.prometheus.metrics.core.metrics.GaugeWithCallback.builder()
        .name("egress_service_agent_reconcile_pending_oldest_seconds")
        .help("Seconds the oldest trigger not yet taken by a reconcile has waited; 0 when none waits.")
        .callback(cb -> cb.call(oldestSeconds.getAsDouble()))
        .register(registry);
  }

  private final java.util.concurrent.atomic.AtomicBoolean apiWatched = new java.util.concurrent.atomic.AtomicBoolean();

  /**
   * The age of the last contact with the API server and whether the watch is up, per kind, read from
   * {@code connectivity} at each scrape. Once per registry: later calls do nothing.
   */
  public void apiConnectivity(io.egressservice.informers.ApiConnectivity connectivity) {
    if (!apiWatched.compareAndSet(false, true)) {
      return;
    }
    io.prometheus.metrics.core.metrics.GaugeWithCallback.builder()
        .name("egress_service_agent_api_last_contact_age_seconds")
        .help("Seconds since the watch of this kind was last seen established (polled twice a second); it grows"
            + " while the API server is unreachable, from the start while it never was.")
        .labelNames("kind")
        .callback(cb -> connectivity.kinds().forEach(k -> cb.call(connectivity.lastContactAgeSeconds(k), k)))
        .register(registry);
    io.prometheus.metrics.core.metrics.GaugeWithCallback.builder()
        .name("egress_service_agent_api_watch_up")
        .help("1 while the watch of this kind is established, 0 while the informer re-lists or cannot reach the API server.")
        .labelNames("kind")
        .callback(cb -> connectivity.kinds().forEach(k -> cb.call(connectivity.watching(k) ? 1 : 0, k)))
        .register(registry);
  }

  public void eventWritten(String op) {
    eventsWritten.labelValues(op).inc();
  }

  public void eventDropped(String cause) {
    eventsDropped.labelValues(cause).inc();
  }

  /** Counts one informer event, and whether it concerned the plan. */
  /**
   * {@code egress_service_agent_no_host_dropped_packets_total{service_namespace,service}}: packets of this node's
   * endpoints of services without a host dropped under {@code --no-host=drop}, read from the nft counters on scrape.
   */
  public void noHostDrops(java.util.function.Supplier<Map<String, Long>> perService) {
    io.prometheus.metrics.core.metrics.CounterWithCallback.builder()
        .name("egress_service_agent_no_host_dropped_packets_total")
        .help("Packets of local endpoints of LoadBalancerIP services without a host, dropped (--no-host=drop)")
        .labelNames("service_namespace", "service")
        .callback(cb -> perService.get().forEach((svc, packets) -> {
          int slash = svc.indexOf('/');
          cb.call(packets, svc.substring(0, Math.max(0, slash)), svc.substring(slash + 1));
        }))
        .register(registry);
  }

  /**
   * {@code egress_service_agent_guard_dropped_packets_total{reason}}: packets the guard table dropped, read from its
   * nft counters on scrape: {@code port} (the steering port from a sender that is not a node, or forwarded to a
   * node's port), {@code tunnel} (out of the steering device, not a steered endpoint leaving the cluster),
   * {@code spoofed} (an opted-in source from an interface the node does not route it through), {@code unsteered} (a
   * source steered to its host about to leave other than through the steering device, while its route is missing).
   */
  public void guardDrops(java.util.function.Supplier<Map<String, Long>> perReason) {
    io.prometheus.metrics.core.metrics.CounterWithCallback.builder()
        .name("egress_service_agent_guard_dropped_packets_total")
        .help("Packets dropped by the steering-port and source guard (table inet egress_service_agent_guard)")
        .labelNames("reason")
        .callback(cb -> perReason.get().forEach((reason, packets) -> cb.call(packets, reason)))
        .register(registry);
  }

  public void apiEvent(boolean relevant) {
    apiEvents.labelValues(Boolean.toString(relevant)).inc();
  }

  public void reconcileInterval(double seconds) {
    reconcileInterval.set(seconds);
  }

  /** How many rules, throw routes and SNAT entries the agent owns in the kernel, per family. */
  public record Owned(Map<IpFamily, Long> rules, Map<IpFamily, Long> snatEntries, Map<IpFamily, Long> routes) {
    public Owned {
      rules = Map.copyOf(rules);
      snatEntries = Map.copyOf(snatEntries);
      routes = Map.copyOf(routes);
    }

    /** As observed in the kernel. */
    public static Owned observed(ObservedState s) {
      return new Owned(
          s.rules().stream().collect(Collectors.groupingBy(r -> r.family(), Collectors.counting())),
          s.nft().snat().stream().collect(Collectors.groupingBy(e -> e.family(), Collectors.counting())),
          s.routes().stream().collect(Collectors.groupingBy(r -> r.family(), Collectors.counting())));
    }

    /** What the kernel holds once a plan was applied in full, from the plan's counts. */
    public static Owned planned(io.egressservice.plan.PlanTotals t) {
      return new Owned(t.rules(), t.snatEntries(), t.routes());
    }

    /** What the kernel holds once a plan was applied in full: the plan itself, without a second dump. */
    public static Owned planned(DesiredState d) {
      return new Owned(
          d.rules().stream().collect(Collectors.groupingBy(r -> r.family(), Collectors.counting())),
          d.snat().stream().collect(Collectors.groupingBy(e -> e.family(), Collectors.counting())),
          d.routes().stream().collect(Collectors.groupingBy(r -> r.family(), Collectors.counting())));
    }
  }

  /** Records one reconcile; {@code trigger} is startup, api, resync, kernel or retry. */
  public void reconciled(String trigger, double seconds, DesiredState desired, ApplyReport report, Owned after,
      double nowEpochSeconds, boolean apiTriggered) {
    reconciled(trigger, seconds, io.egressservice.plan.PlanTotals.of(desired), report, after, nowEpochSeconds,
        apiTriggered);
  }

  /** The same, with the plan's counts kept by the planner (no pass over the plan). */
  public void reconciled(String trigger, double seconds, io.egressservice.plan.PlanTotals totals, ApplyReport report,
      Owned after, double nowEpochSeconds, boolean apiTriggered) {
    reconcileDuration.labelValues(trigger).observe(seconds);
    for (Change c : report.applied()) {
      changesApplied.labelValues(c.kind().name().toLowerCase(java.util.Locale.ROOT),
          c.op().name().toLowerCase(java.util.Locale.ROOT)).inc();
    }
    if (!apiTriggered && !report.applied().isEmpty()) {
      driftRepairs.inc(report.applied().size());
    }
    if (report.succeeded()) {
      lastSuccess.set(nowEpochSeconds);
    } else {
      reconcileErrors.inc();
    }
    for (IpFamily f : IpFamily.values()) {
      ownedRules.labelValues(f.iproute2Name()).set(after.rules().getOrDefault(f, 0L));
      snatEntries.labelValues(f.iproute2Name()).set(after.snatEntries().getOrDefault(f, 0L));
      ownedRoutes.labelValues(f.iproute2Name()).set(after.routes().getOrDefault(f, 0L));
    }
    services.labelValues("configured").set(totals.configuredServices());
    services.labelValues("not_configured").set(totals.notConfiguredServices());
    skippedEndpoints.set(totals.skippedEndpoints());
    remoteEndpoints.set(totals.remoteEndpoints());
    for (IpFamily f : IpFamily.values()) {
      steeredEndpoints.labelValues(f.iproute2Name()).set(totals.steeredEndpoints().getOrDefault(f, 0L));
    }
  }

  /** How many EgressServices one reconcile planned: all of them in a full plan, the changed ones otherwise. */
  public void servicesPlanned(int count) {
    servicesPlanned.observe(count);
  }

  /** How many cached objects of {@code kind} are malformed now. */
  public void malformedObjects(String kind, long count) {
    malformedObjects.labelValues(kind).set(count);
  }

  public void reconcileFailed(String trigger, double seconds) {
    reconcileDuration.labelValues(trigger).observe(seconds);
    reconcileErrors.inc();
  }
}

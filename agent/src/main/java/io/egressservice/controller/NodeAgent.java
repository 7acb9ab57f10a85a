package io.egressservice.controller;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.NodePlan;
import io.egressservice.dataplane.ObservedState;
import io.egressservice.health.HealthServer.Probe;
import io.egressservice.health.Hosting;
import io.egressservice.informers.ClusterInformers;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.netlink.ChangeEvent;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.ChangeGroup;
import io.egressservice.netlink.Subscription;
import io.egressservice.dataplane.Differ;
import io.egressservice.dataplane.KernelFacts;
import io.egressservice.objects.ChangeFeed;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.IncrementalPlanner;
import io.egressservice.plan.NodeObservations;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.PlanDelta;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.RuleSpec;
import io.egressservice.reconcile.Backoff;
import io.egressservice.reconcile.ReconcileLoop;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Clock;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.time.Duration;
import java.util.EnumSet;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The node agent's control loop: informers mark the node dirty, one worker coalesces bursts into a
 * single reconcile (plan from the caches, then the dataplane), failures retry with capped exponential
 * backoff, a periodic resync and kernel rule notifications run the very same reconcile (drift repair).
 *
 * <p>Nothing reconciles before every informer has synced, so an empty cache never prunes the kernel.
 * Stopping leaves the kernel as it is: a restart or an upgrade does not disturb traffic.
 *
 * <p>The parts: {@link RelevantChangeHandler} turns informer events into triggers, {@link DriftFilter} kernel
 * notifications, the {@link ReconcileLoop} (shared with the allocator) decides when the next reconcile starts and
 * retries, {@link ReconcileLog} logs it, and {@link OutcomeReporter} writes its outcomes as Events.
 */
public final class NodeAgent implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(NodeAgent.class);
  static final String TRIGGER_API = "api";
  static final String TRIGGER_RESYNC = ReconcileLoop.RESYNC;
  static final String TRIGGER_KERNEL = "kernel";
  static final String TRIGGER_STARTUP = ReconcileLoop.STARTUP;
  static final String TRIGGER_RETRY = ReconcileLoop.RETRY;

  /**
   * @param maxBackoff cap of the retry delay after failed reconciles (doubling from 100 ms)
   * @param events how many Events may be written, per service and overall
   * @param watchDownGrace how long an informer's watch may be down (being re-established) before /readyz says so
   */
  public record Settings(String nodeName, PlanConfig config, Duration resync, Duration maxBackoff, EventLimits events,
      Duration watchDownGrace) {
    /** The default grace for a watch that is down: 30 s. */
    public static final Duration WATCH_DOWN_GRACE = Duration.ofSeconds(30);

    public Settings {
      if (resync.isNegative() || resync.isZero()) {
        throw new IllegalArgumentException("resync must be positive, not " + resync);
      }
    }

    public Settings(String nodeName, PlanConfig config, Duration resync, Duration maxBackoff) {
      this(nodeName, config, resync, maxBackoff, EventLimits.defaults(), WATCH_DOWN_GRACE);
    }

    public Settings(String nodeName, PlanConfig config, Duration resync, Duration maxBackoff, EventLimits events) {
      this(nodeName, config, resync, maxBackoff, events, WATCH_DOWN_GRACE);
    }

    public Settings(String nodeName, PlanConfig config, Duration resync, Duration maxBackoff,
        Duration watchDownGrace) {
      this(nodeName, config, resync, maxBackoff, EventLimits.defaults(), watchDownGrace);
    }
  }

  private final ClusterInformers informers;
  private final boolean ownsInformers;
  private final Dataplane dataplane;
  private final Settings settings;
  private final AgentMetrics metrics;
  private final EventRecorder eventRecorder;
  private final OutcomeReporter reporter;
  private final Clock clock;

  private final ReconcileLoop loop;
  private final DriftFilter drift;
  private volatile boolean synced;
  private volatile boolean firstReconcileDone;
  private volatile Runnable afterFirstReconcile = () -> { };
  private final AtomicLong reconciles = new AtomicLong();
  private OptionalLong lastNftGeneration = OptionalLong.empty();
  /** Never an nftables generation (they are unsigned 32-bit): see {@link #nftGenerationAccountedFor()}. */
  private static final long UNACCOUNTED_GENERATION = -1;
  private List<String> lastRefusedInputs = List.of();
  /** The objects changed since the last reconcile, and the plan kept up to date from them (worker thread). */
  private final ChangeFeed changes = new ChangeFeed();
  private IncrementalPlanner planner;
  /** The plan the kernel holds, when the last reconcile applied it in full. */
  private DesiredState applied;
  /** The services whose receiving side the kernel holds (written by the worker, read by /hosting). */
  private volatile Set<ObjectRef> hosting = Set.of();
  /**
   * Kernel notifications that cast doubt on our view of the kernel (drift, an address or link change, an overflow
   * of the subscription, an nft edit): the kernel is taken to hold {@link #applied} only while none came since the
   * reconcile that applied it ({@link #cleanAt}); otherwise the next reconcile observes and diffs in full.
   */
  private final AtomicLong kernelDoubts = new AtomicLong();
  private long cleanAt = -1;
  private volatile Optional<ReconcileSummary> lastReconcile = Optional.empty();
  /** Informer caches replace objects, never mutate them: each reconcile converts only what changed. */
  private final PlanInputs.Memo planInputs = PlanInputs.Memo.forImmutableObjects();

  private Subscription kernelEvents;

  /** An agent with informers of its own (closed with it). */
  public NodeAgent(KubernetesClient client, Dataplane dataplane, Settings settings, AgentMetrics metrics,
      EventSink events, Clock clock) {
    this(ClusterInformers.create(client, Duration.ZERO), true, dataplane, settings, metrics, events, clock);
  }

  /** An agent on informers the process shares (with the allocator); the caller starts and closes them too. */
  public NodeAgent(ClusterInformers informers, Dataplane dataplane, Settings settings, AgentMetrics metrics,
      EventSink events, Clock clock) {
    this(informers, false, dataplane, settings, metrics, events, clock);
  }

  private NodeAgent(ClusterInformers informers, boolean ownsInformers, Dataplane dataplane, Settings settings,
      AgentMetrics metrics, EventSink events, Clock clock) {
    this.informers = informers;
    this.ownsInformers = ownsInformers;
    this.dataplane = dataplane;
    this.settings = settings;
    this.metrics = metrics;
    this.eventRecorder = new EventRecorder(events, metrics, settings.events(), clock, "events-" + settings.nodeName());
    this.reporter = new OutcomeReporter(eventRecorder, settings.nodeName());
    this.clock = clock;
    this.drift = new DriftFilter(settings.config());
    this.loop = new ReconcileLoop(new ReconcileLoop.Settings("reconcile-" + settings.nodeName(), settings.resync(),
        ReconcileLoop.Pace.ADAPTIVE, Backoff.from100Millis(settings.maxBackoff()), LOG),
        due -> reconcileOnce(due.cause(), due.change()))
        .startWhen(informers::hasSynced, this::informersSynced,
            "the informers to sync before the first reconcile (the kernel is left as it is)")
        .whenIdle(TRIGGER_KERNEL, () -> {
          if (nftChangedSinceLastReconcile()) {
            doubtKernel();
            return true;
          }
          return false;
        })
        .onInterval(metrics::reconcileInterval);
  }

  /** Starts the informers, the kernel subscription and the worker; returns at once. */
  public void start() {
    informers.addEventHandler(org.ovn.k8s.v1.EgressService.class,
        new RelevantChangeHandler<>(PlanInputs::egressService, es -> true, changes::egressService, this::apiEvent));
    informers.addEventHandler(io.fabric8.kubernetes.api.model.Service.class, new RelevantChangeHandler<>(PlanInputs::service,
        s -> informers.hasEgressService(s.getMetadata().getNamespace(), s.getMetadata().getName()), changes::service,
        this::apiEvent));
    informers.addEventHandler(io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice.class,
        new RelevantChangeHandler<>(PlanInputs::slice,
        s -> informers.hasEgressService(s.getMetadata().getNamespace(), PlanInputs.serviceName(s)), changes::slice,
        this::apiEvent));
    informers.addEventHandler(io.fabric8.kubernetes.api.model.Node.class,
        new RelevantChangeHandler<>(PlanInputs::node, n -> true, changes::node, this::apiEvent));
    informers.grants().ifPresent(g -> g.addListener(new io.egressservice.informers.GrantInformers.Listener() {
      @Override
      public void namespace(io.egressservice.plan.NamespaceInfo ns, boolean deleted) {
        changes.namespace(ns, deleted);
        apiEvent(true);
      }

      @Override
      public void policy(io.egressservice.plan.GrantPolicy policy) {
        changes.policy(policy);
        apiEvent(true);
      }
    }));
    informers.start();
    metrics.apiConnectivity(informers.connectivity());
    metrics.pendingWork(() -> loop.pending().triggers(), () -> loop.pending().oldestSeconds());
    eventRecorder.start(reporter::seeded);
    try {
      kernelEvents = dataplane.kernel().routing().subscribe(
          EnumSet.of(ChangeGroup.IPV4_RULE, ChangeGroup.IPV6_RULE, ChangeGroup.IPV4_ROUTE, ChangeGroup.IPV6_ROUTE,
              ChangeGroup.LINK, ChangeGroup.IPV4_ADDRESS, ChangeGroup.IPV6_ADDRESS), this::onKernelEvent,
          () -> {
            // Notifications were lost: the view of the kernel is stale until a full observation.
            doubtKernel();
            dataplane.invalidateFacts();
            trigger(TRIGGER_KERNEL);
          });
    } catch (RuntimeException e) {
      LOG.warn("no kernel change notifications ({}); drift is repaired at each resync only", e.getMessage());
    }
    loop.start();
  }

  private void apiEvent(boolean relevant) {
    metrics.apiEvent(relevant);
    if (relevant) {
      trigger(TRIGGER_API);
    }
  }

  /** Drift, or a change of the plan's inputs, triggers a reconcile ({@link DriftFilter}); our own echo does not. */
  private void onKernelEvent(ChangeEvent e) {
    boolean relevant = drift.relevant(e);
    // a network's table got its first route of a family: the warning about it ends now, not at the resync
    relevant |= e.kind() == io.egressservice.netlink.ChangeKind.NEW
        && e.route().filter(dataplane::mayEndNoRouteWarning).isPresent();
    if (e.address().isPresent() || e.link().isPresent()) {
      dataplane.invalidateFacts();
    }
    if (relevant) {
      doubtKernel();
      trigger(TRIGGER_KERNEL);
    }
  }

  /** The next reconcile observes the kernel in full (it may not hold the last plan). */
  private void doubtKernel() {
    kernelDoubts.incrementAndGet();
  }

  /** Marks the node dirty; the worker reconciles once for any number of triggers that arrive meanwhile. */
  public void trigger(String cause) {
    if (TRIGGER_API.equals(cause)) {
      loop.changed(cause);
    } else {
      loop.trigger(cause);
    }
  }

  /**
   * Runs {@code action} once, on the reconcile thread, right after the first reconcile that applied everything
   * (the process uses it to give back the heap its start needed; see {@code lifecycle.HeapCompaction}).
   */
  public void afterFirstReconcile(Runnable action) {
    afterFirstReconcile = java.util.Objects.requireNonNull(action);
  }

  /** The loop may start: the informers have listed everything once. */
  private void informersSynced() {
    synced = true;
    LOG.info("informers synced: {} EgressService(s), {} Service(s), {} EndpointSlice(s), {} Node(s)",
        informers.egressServices().getStore().list().size(), informers.services().getStore().list().size(),
        informers.endpointSlices().getStore().list().size(), informers.nodes().getStore().list().size());
  }

  /**
   * The nftables generation now, when the dataplane's listings account for every commit up to it; otherwise (an
   * edit by someone else landed during this reconcile, after its listing) one no generation equals, so the next
   * check doubts the kernel and the next reconcile observes in full.
   */
  private OptionalLong nftGenerationAccountedFor() {
    OptionalLong now = dataplane.nftGeneration();
    return now.isPresent() && !dataplane.nftListedAt(now.getAsLong()) ? OptionalLong.of(UNACCOUNTED_GENERATION) : now;
  }

  private boolean nftChangedSinceLastReconcile() {
    OptionalLong now = dataplane.nftGeneration();
    return now.isPresent() && lastNftGeneration.isPresent() && now.getAsLong() != lastNftGeneration.getAsLong();
  }

  /**
   * One reconcile; true when everything was applied. Never throws: the loop must go on.
   *
   * <p>An API change while the kernel holds the last plan (it was applied in full and no kernel notification
   * doubted it since) takes the fast path: only the changed objects are converted, only the services they touch
   * re-planned, and the dataplane applies the difference for those services. Every other reconcile (startup,
   * resync, drift, a retry) observes the kernel and diffs in full; startup and resync also reload the plan's inputs
   * from the caches.
   */
  private boolean reconcileOnce(String trigger, boolean apiTriggered) {
    long start = System.nanoTime();
    // Someone edited nftables since the last reconcile: this one observes in full. The idle wait checks this too,
    // but not while triggers keep the loop busy (endpoint churn), and a fast reconcile would take the edit for its own.
    if (nftChangedSinceLastReconcile()) {
      doubtKernel();
    }
    long doubts = kernelDoubts.get();
    // Before any object is read: a watch that is up now delivered everything up to now. The startup reconcile
    // follows the informers' first list, the freshest view there is, before the watches are seen established.
    boolean fresh = informers.connectivity().allWatching() || TRIGGER_STARTUP.equals(trigger);
    boolean succeeded = false;
    try {
      boolean reload = planner == null || TRIGGER_STARTUP.equals(trigger) || TRIGGER_RESYNC.equals(trigger);
      if (reload) {
        changes.clear();
        planner = changes.load(informers.snapshot(), settings.nodeName(), settings.config(), planInputs);
        if (TRIGGER_RESYNC.equals(trigger)) {
          dataplane.invalidateFacts();
        }
      } else {
        changes.drainInto(planner);
      }
      metrics.malformedObjects("EgressService", changes.malformedEgressServices());
      boolean fast = TRIGGER_API.equals(trigger) && applied != null && cleanAt == doubts && !reload;
      PlanDelta delta;
      ApplyReport report;
      if (fast) {
        delta = planner.plan(observations(dataplane.currentFacts(planner.networks())));
        if (delta.full()) {
          drift.expectRules(delta.desired());
          report = dataplane.reconcile(delta.desired());
        } else {
          drift.expectRuleChanges(delta);
          report = dataplane.reconcileChanged(applied, delta.desired(), delta.changedServices());
        }
      } else {
        long observeStart = System.nanoTime();
        ObservedState observed = dataplane.observe();
        long observeNanos = System.nanoTime() - observeStart;
        delta = planner.planFull(observations(dataplane.facts(planner.networks(), observed)));
        DesiredState desired = delta.desired();
        Map<Rule, RuleSpec> wanted = Differ.wantedRules(desired);
        drift.expectRules(desired);
        // Mark mode's reverse-path facts are the dataplane's to observe: it observes again for them.
        report = desired.ruleMode() == RuleMode.MARK && !desired.networkMarks().isEmpty()
            ? dataplane.reconcile(desired)
            : dataplane.reconcile(new NodePlan(desired, wanted, observed, observeNanos, dataplane.steeringMtu(desired)));
      }
      DesiredState desired = delta.desired();
      drift.expectRoutes(desired);
      if (desired.refusedInputs() != lastRefusedInputs && !desired.refusedInputs().equals(lastRefusedInputs)) {
        desired.refusedInputs().forEach(r -> LOG.warn("refused input: {}", r));
      }
      lastRefusedInputs = desired.refusedInputs();
      lastNftGeneration = nftGenerationAccountedFor();
      succeeded = report.succeeded();
      applied = succeeded ? desired : null;
      recordHosting(succeeded);
      double seconds = (System.nanoTime() - start) / 1e9;
      // Applied in full: the kernel holds the plan, so the gauges need no second dump of it (a reconcile per
      // endpoint update made that dump a large part of its cost). Otherwise ask the kernel what it holds.
      AgentMetrics.Owned after = succeeded ? AgentMetrics.Owned.planned(delta.totals())
          : AgentMetrics.Owned.observed(dataplane.observe());
      metrics.reconciled(trigger, seconds, delta.totals(), report, after, clock.millis() / 1000.0, apiTriggered);
      if (succeeded && fresh && !fast) {
        metrics.kernelCheckedFresh(clock.millis() / 1000.0);
      }
      metrics.servicesPlanned(delta.servicesPlanned());
      if (delta.full()) {
        reporter.report(desired);
      } else {
        reporter.reportChanged(desired, delta.changedServices(), delta.outcomes());
      }
      lastReconcile = Optional.of(new ReconcileSummary(trigger, report.applied().size(), report.failures().size(),
          delta.full(), delta.servicesPlanned()));
      reconciles.incrementAndGet();
      ReconcileLog.log(trigger, seconds, report);
      boolean first = !firstReconcileDone && succeeded;
      firstReconcileDone = firstReconcileDone || succeeded;
      if (first) {
        afterFirstReconcile.run();
      }
      return succeeded;
    } catch (RuntimeException e) {
      applied = null;
      metrics.reconcileFailed(trigger, (System.nanoTime() - start) / 1e9);
      LOG.error("reconcile ({}) failed: {}", trigger, e.getMessage(), e);
      return false;
    } finally {
      // Clean only as of the doubts seen before this reconcile observed or applied anything.
      cleanAt = succeeded ? doubts : -1;
    }
  }

  /**
   * After a reconcile: the services whose receiving side the kernel holds. A failed one adds none (what it did apply
   * is uncertain), but lets go of those no longer planned.
   */
  private void recordHosting(boolean succeeded) {
    Set<ObjectRef> planned = planner.receiving();
    if (succeeded) {
      hosting = planned;
    } else if (!planned.containsAll(hosting)) {
      hosting = hosting.stream().filter(planned::contains).collect(java.util.stream.Collectors.toUnmodifiableSet());
    }
  }

  /** {@code /hosting}: this node and the services it receives for ({@link Hosting}). */
  public Hosting hosting() {
    return new Hosting(settings.nodeName(), hosting.stream().map(ObjectRef::toString).toList());
  }

  private static NodeObservations observations(KernelFacts facts) {
    return new NodeObservations(facts.localAddresses(), facts.networks(), facts.existingMarks(),
        facts.existingSteerTables());
  }

  /** /healthz: the loop is alive (it wakes at least once a second). */
  public Probe liveness() {
    ReconcileLoop.Liveness live = loop.liveness();
    return new Probe(live.alive(), live.alive() ? "reconcile loop alive"
        : "reconcile loop stuck or dead (idle " + live.idleSeconds() + " s)");
  }

  /**
   * /readyz: informers synced, the first reconcile applied, and every watch running (or back within
   * {@link Settings#watchDownGrace()}: a watch is re-established now and then, which is no reason to be unready).
   */
  public Probe readiness() {
    if (!synced) {
      return new Probe(false, "informers not synced yet");
    }
    if (!firstReconcileDone) {
      return new Probe(false, "first reconcile not done yet");
    }
    List<String> down = watchesDownTooLong();
    if (!down.isEmpty()) {
      return new Probe(false, "watch not running for more than " + settings.watchDownGrace().toMillis() + " ms: "
          + String.join(", ", down) + " (the kernel keeps what was applied; changes of those kinds are not seen)");
    }
    return new Probe(true, "synced and reconciled");
  }

  /** Every outcome reported so far has been written as an Event, or dropped (counted). */
  boolean eventsIdle() {
    return eventRecorder.idle();
  }

  /** The kinds whose watch has not been seen up for the grace (ApiConnectivity polls them for the metrics). */
  private List<String> watchesDownTooLong() {
    return informers.connectivity().downFor(settings.watchDownGrace());
  }

  public long reconcileCount() {
    return reconciles.get();
  }

  /** What the last completed reconcile did (counts only: a cold start's thousands of changes are not kept). */
  public Optional<ReconcileSummary> lastReconcile() {
    return lastReconcile;
  }

  /**
   * @param trigger api, resync, kernel, startup or retry
   * @param full whether every service was planned and the kernel observed in full (else only the changed services)
   * @param servicesPlanned how many EgressServices were planned
   */
  public record ReconcileSummary(String trigger, int changesApplied, int changesRefused, boolean full,
      int servicesPlanned) {
    public ReconcileSummary(String trigger, int changesApplied, int changesRefused) {
      this(trigger, changesApplied, changesRefused, true, 0);
    }
  }

  /** Stops after the current reconcile; leaves the kernel as it is. */
  @Override
  public void close() {
    loop.close(Duration.ofSeconds(30));
    if (kernelEvents != null) {
      kernelEvents.close();
    }
    if (ownsInformers) {
      informers.close();
    }
    eventRecorder.close();
  }
}

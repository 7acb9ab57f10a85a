package io.egressservice.allocator;

import io.egressservice.informers.ClusterInformers;
import io.egressservice.informers.GrantInformers;
import io.egressservice.objects.GrantObjects;
import io.egressservice.plan.GrantPolicy;
import io.egressservice.plan.NamespaceInfo;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.model.ObjectRef;
import io.egressservice.reconcile.Backoff;
import io.egressservice.reconcile.Due;
import io.egressservice.reconcile.ReconcileLoop;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The fabric8 edge of the allocator: informers on EgressService, Service, EndpointSlice and Node feed one worker
 * thread; while {@linkplain #startLeading() leading}, each pass decides the services a change touched (an
 * {@link IncrementalAllocation}; a full pass with {@link AllocationPass} at the start of a term, every resync period
 * and after a failure) and writes only the differences: {@code status.host} through the status subresource
 * (with conflict retries), node labels by JSON merge patch of {@code metadata.labels}, and core/v1 Events on the
 * EgressService when its outcome (host, reason) changes.
 *
 * <p>Events are remembered per leadership term: on taking over, a service whose status is already right gets no
 * Event; after that an Event is written only when host or reason changes, never for a resync.
 *
 * <p>An event of an object no EgressService refers to (a Service or slice of another name) costs a map lookup and
 * schedules nothing.
 *
 * <p>Informers run on every replica (a follower's caches are warm when it takes over); only the leader's worker
 * writes, and it checks leadership before every write. Host probes run on every replica too: a follower probes the
 * hosts its cache shows in {@code status.host}, so when the leader dies with a host the new leader already knows
 * that host is gone and moves its services in its first pass.
 *
 * <p>When most probed nodes fail at once ({@link HostHealth}: more than half, at least 2) the allocator suspects its
 * own path to the nodes and drains nothing new, so it moves nothing; it says so in a log line, the gauge
 * {@code egress_service_agent_allocator_self_suspected} and to its {@link Listener}s (the runner writes an Event on
 * the Lease).
 *
 * <p>The parts: {@link ChangeIntake} notes what the informers' events touch, {@link HostWatch} probes the hosts,
 * {@link DecisionWriter} writes and reports what a pass decided, through {@link AllocatorWrites}; this class runs the
 * passes on its one worker thread, and holds the leadership term.
 */
public final class Allocator implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);
  static final String COMPONENT = "egress-service-allocator";
  /**
   * Failed passes are retried from 100 ms, doubling up to this. The retry also waits out {@link #PASS_SPACING}, so the
   * first one starts 250 ms after the failed pass started (it was 200 ms doubling when the allocator had a loop of
   * its own: the spacing hid the difference for a pass shorter than 150 ms, and a change never waited for either).
   */
  private static final Duration MAX_BACKOFF = Duration.ofSeconds(30);
  /**
   * Passes start at least this far apart, so a burst of endpoint churn is decided in a few passes; a host choice
   * 250 ms later changes nothing that matters. The first event after a quiet spell still runs a pass at once.
   */
  static final Duration PASS_SPACING = Duration.ofMillis(250);
  /** What the loop calls a pass for a change it was told of (the informers' events, probe verdicts, grants). */
  private static final String CHANGE = "change";
  /** ... and the pass that begins a leadership term. */
  private static final String LEADING = "leading";

  private final KubernetesClient client;
  private final AllocatorConfig config;
  private final String identity;
  /** The one worker: passes, and the probe targets' refresh between them. */
  private final ReconcileLoop loop;
  private volatile boolean leading;
  private final AtomicLong term = new AtomicLong();
  private volatile boolean closed;
  /** Why the last pass failed (worker thread only). */
  private String lastFailure = "";

  private final ClusterInformers informers;
  private final boolean ownsInformers;
  private final AllocatorMetrics metrics;

  private final AtomicLong passes = new AtomicLong();
  private final AtomicLong fullPasses = new AtomicLong();
  private final AtomicLong servicesEvaluated = new AtomicLong();
  private volatile int lastPassEvaluated;

  private final AllocatorObjects objects;
  /** Worker thread only. */
  private final IncrementalAllocation allocation;
  private final ChangeIntake intake;
  private final HostWatch hostWatch;
  private final AllocatorWrites writes;
  private final DecisionWriter decisions;
  private Optional<PlannedMoves> plannedMoves = Optional.empty();
  private final List<Listener> listeners = new CopyOnWriteArrayList<>();

  /** An allocator with informers of its own (resync {@link AllocatorConfig#resyncPeriod()}), closed with it. */
  public Allocator(KubernetesClient client, AllocatorConfig config, String identity) {
    this(client, config, identity, new AllocatorMetrics());
  }

  /** The same, counting into {@code metrics}. */
  public Allocator(KubernetesClient client, AllocatorConfig config, String identity, AllocatorMetrics metrics) {
    this(client, ownInformers(client, config), true, config, identity, metrics);
  }

  private static ClusterInformers ownInformers(KubernetesClient client, AllocatorConfig config) {
    ClusterInformers informers = ClusterInformers.create(client, config.resyncPeriod());
    if (config.grantPolicyEnforced()) {
      informers.followGrants(client);
    }
    return informers;
  }

  /**
   * An allocator on informers the process shares with the node agent; the caller starts and closes
   * them, with a resync period (it drives the allocator's periodic pass).
   */
  public Allocator(KubernetesClient client, ClusterInformers informers, AllocatorConfig config, String identity) {
    this(client, informers, config, identity, new AllocatorMetrics());
  }

  /** The same, counting into {@code metrics}. */
  public Allocator(KubernetesClient client, ClusterInformers informers, AllocatorConfig config, String identity,
      AllocatorMetrics metrics) {
    this(client, informers, false, config, identity, metrics);
  }

  private Allocator(KubernetesClient client, ClusterInformers informers, boolean ownsInformers, AllocatorConfig config,
      String identity, AllocatorMetrics metrics) {
    this.informers = Objects.requireNonNull(informers);
    this.ownsInformers = ownsInformers;
    this.metrics = Objects.requireNonNull(metrics);
    this.client = Objects.requireNonNull(client);
    this.config = Objects.requireNonNull(config);
    this.identity = Objects.requireNonNull(identity);
    this.objects = new AllocatorObjects(informers);
    this.allocation = new IncrementalAllocation(config.endpointTrust());
    this.hostWatch = new HostWatch(config, identity, metrics, listeners, informers, objects,
        this::nodeVerdictChanged, () -> closed, () -> leading ? allocation.hostedNodes() : Set.of());
    this.intake = new ChangeIntake(objects, this::requestPass, hostWatch::targetsChanged);
    this.writes = new AllocatorWrites(client, identity, () -> leading && !closed);
    this.decisions = new DecisionWriter(identity, writes, metrics, listeners, hostWatch, () -> plannedMoves);
    metrics.pendingWork(this::pendingSeconds);
    // The resync is a full pass asked for every period (below), not the loop's own: the loop counts a pass that
    // runs past the resync time as the resync, and an incremental pass is not one.
    this.loop = new ReconcileLoop(new ReconcileLoop.Settings("egress-allocator-" + identity, Duration.ZERO,
        ReconcileLoop.Pace.fixed(PASS_SPACING), Backoff.from100Millis(MAX_BACKOFF), LOG), this::runPass)
        .startWhen(informers::hasSynced, () -> { }, "the informers to sync before the first pass")
        .onRetry((failed, delay) -> LOG.warn("{}: allocation pass failed (attempt {}), retrying in {} ms: {}", identity,
            failed, delay, lastFailure));
  }

  /** Starts the informers; nothing is written until {@link #startLeading()}. */
  public synchronized void start() {
    intake.register(informers);
    // The grants are read by every decision, and rarely change: a change decides everything again.
    informers.grants().ifPresent(g -> g.addListener(new GrantInformers.Listener() {
      @Override
      public void namespace(NamespaceInfo ns, boolean deleted) {
        intake.requestFullPass();
      }

      @Override
      public void policy(GrantPolicy policy) {
        intake.requestFullPass();
      }
    }));
    Duration resync = config.resyncPeriod();
    if (!resync.isNegative() && !resync.isZero()) {
      loop.every(resync, intake::requestFullPass);
    }
    plannedMoves = Optional.of(new PlannedMoves(client, config.plannedMoves(), config.probes(), name ->
        objects.nodeObjects().stream().filter(n -> name.equals(n.getMetadata().getName())).findFirst()
            .flatMap(HostWatch::internalIp), intake::touch, () -> leading && !closed, identity));
    if (config.probes().enabled()) {
      hostWatch.start();
      // On the worker, between passes: the refresh and a pass's own probe update never interleave.
      loop.every(config.probes().interval(), hostWatch::refreshTargets);
    }
    informers.start();
    loop.start();
  }

  /** A node became unreachable or answers again (a probe thread): the next pass reads the nodes again. */
  private void nodeVerdictChanged() {
    intake.nodeVerdictChanged();
  }

  /** The nodes this replica probes now (hosts, candidates, unreachable nodes). */
  public Set<String> probedNodes() {
    return hostWatch.probedNodes();
  }

  /** Whether this replica suspects its own path to the nodes now (and so drains nothing new). */
  public boolean selfSuspected() {
    return hostWatch.selfSuspected();
  }

  /** Nodes the health probes hold unreachable now. */
  public Set<String> unreachableNodes() {
    return hostWatch.unreachableNodes();
  }

  /** Told about every failover and every host change this instance writes. */
  public interface Listener {
    /** A service left an unreachable host: seconds from the host's last answer to the new status.host written. */
    void failover(ObjectRef service, String from, String to, double seconds);

    /** A service's status.host changed (written by this instance), at {@code epochSeconds}. */
    void hostChanged(ObjectRef service, String from, String to, long epochSeconds);

    /**
     * This replica began ({@code suspected}) or ended suspecting its own path to the nodes; {@code judgment} is the
     * one that began or ended it. Called on a probe thread: hand slow work off.
     */
    default void selfSuspected(boolean suspected, HostHealth.Suspicion judgment) {}
  }

  public void addListener(Listener l) {
    listeners.add(Objects.requireNonNull(l));
  }

  /** Seconds from an unreachable host's last answer to each of its services' new status.host written, in order. */
  public List<Double> failoverSeconds() {
    return decisions.failoverSeconds();
  }

  /** When this instance last wrote a different status.host of each service (epoch seconds). */
  public Map<ObjectRef, Long> lastHostChange() {
    return decisions.lastHostChange();
  }

  /** Begins a leadership term: forgets reported outcomes and runs a pass. */
  public void startLeading() {
    LOG.info("{}: leading, allocating egress service hosts", identity);
    term.incrementAndGet();
    intake.needFull();
    leading = true;
    metrics.leading(true);
    loop.now(LEADING);
  }

  /** Ends the term; no write is started after this returns. */
  public void stopLeading() {
    if (leading) {
      LOG.info("{}: no longer leading, stopped writing", identity);
    }
    leading = false;
    metrics.leading(false);
    term.incrementAndGet();
    // The probes go on: a follower that knows which hosts are gone moves their services in its first pass.
  }

  public boolean isLeading() {
    return leading;
  }

  /** Whether every informer has listed its kind once (a replica that has not cannot take over usefully). */
  public boolean synced() {
    return informers.hasSynced();
  }

  /** How long the pass now queued has waited to start (changes wait for it); 0 when none is queued. */
  public double pendingSeconds() {
    return loop.pending().oldestSeconds();
  }

  /**
   * The kinds whose watch has been down for at least {@code bound}, with the seconds since each was last up
   * ({@link io.egressservice.informers.ApiConnectivity#downAges}).
   */
  public java.util.Map<String, Double> watchesDownFor(java.time.Duration bound) {
    return informers.connectivity().downAges(bound);
  }

  /** Whether every informer's watch is open ({@link ClusterInformers#watching()}). */
  public boolean watching() {
    return informers.watching();
  }

  /** Waits (bounded) until a pass in progress, if any, has finished. */
  void awaitIdle(long timeoutMillis) {
    if (!loop.awaitIdle(Duration.ofMillis(timeoutMillis))) {
      LOG.debug("{}: worker not idle after {} ms", identity, timeoutMillis);
    }
  }

  /** Number of passes that computed an allocation (leader only). */
  public long passes() {
    return passes.get();
  }

  /** Number of those passes that decided every service (start of a term, resync, after a failure). */
  public long fullPasses() {
    return fullPasses.get();
  }

  /** Number of services decided again, summed over all passes. */
  public long servicesEvaluated() {
    return servicesEvaluated.get();
  }

  /** Number of services the last pass decided again. */
  public int lastPassEvaluated() {
    return lastPassEvaluated;
  }

  /** Number of successful {@code status.host} writes by this instance. */
  public long statusWrites() {
    return writes.statusWrites();
  }

  /** Number of successful node label patches by this instance. */
  public long labelPatches() {
    return writes.labelPatches();
  }

  /** Number of 409 Conflict answers to status writes (each retried). */
  public long statusConflicts() {
    return writes.statusConflicts();
  }

  /** Number of Events written by this instance. */
  public long eventsWritten() {
    return writes.eventsWritten();
  }

  /** Any number of requests that come before a pass starts make that one pass (changes and probe verdicts). */
  void requestPass() {
    if (!closed) {
      loop.changed(CHANGE);
    }
  }

  /** One pass on the loop's worker; false when it failed (the loop retries it after its backoff). */
  private boolean runPass(Due due) {
    if (!leading || closed) {
      return true;
    }
    decisions.term(term.get());
    try {
      if (intake.takeFullNeeded()) {
        fullPass();
      } else {
        incrementalPass();
      }
      return true;
    } catch (AllocatorWrites.NotLeadingException e) {
      intake.needFull();
      LOG.debug("{}: pass abandoned, leadership lost", identity);
      return true;
    } catch (RuntimeException e) {
      // What was decided may not have been written: the retry decides and checks everything again.
      intake.needFull();
      lastFailure = e.toString();
      return false;
    }
  }

  private void fullPass() {
    intake.drainTouched();
    intake.takeNodesChanged();
    Set<String> unreachable = unreachableNodes();
    List<NodeState> nodes = objects.nodes(unreachable);
    IncrementalAllocation.Step step = informers.grants()
        .map(g -> {
          GrantObjects read = g.snapshot();
          Map<String, NamespaceInfo> namespaces = new java.util.HashMap<>();
          read.namespaces().forEach(ns -> namespaces.put(ns.name(), ns));
          return allocation.full(objects.readAll(), nodes, read.policy(), namespaces);
        })
        .orElseGet(() -> allocation.full(objects.readAll(), nodes));
    fullPasses.incrementAndGet();
    apply(step, true, true, unreachable);
  }

  private void incrementalPass() {
    Set<ObjectRef> refs = intake.drainTouched();
    boolean nodes = intake.takeNodesChanged();
    if (refs.isEmpty() && !nodes) {
      return;
    }
    for (ObjectRef ref : refs) {
      objects.read(ref).ifPresentOrElse(allocation::put, () -> allocation.remove(ref));
    }
    Set<String> unreachable = unreachableNodes();
    if (nodes) {
      allocation.nodes(objects.nodes(unreachable));
    }
    apply(allocation.evaluate(), false, nodes, unreachable);
  }

  /**
   * Writes what the step decided: status, Events, metrics ({@link DecisionWriter}), probe targets (when the hosts or
   * the nodes changed), node labels.
   */
  private void apply(IncrementalAllocation.Step step, boolean full, boolean nodesChanged, Set<String> unreachable) {
    passes.incrementAndGet();
    servicesEvaluated.addAndGet(step.evaluated().size());
    lastPassEvaluated = step.evaluated().size();
    metrics.pass(full, step.evaluated().size());
    decisions.write(step, full, unreachable, objects, allocation);
    if (hostWatch.probing() && (full || nodesChanged || step.hostsChanged())) {
      hostWatch.probeAfterPass(allocation.hostedNodes(), objects.nodes(unreachable), objects.nodeObjects(),
          unreachable);
    }

    for (Map.Entry<String, Map<String, Boolean>> e : step.labelChanges().entrySet()) {
      writes.patchLabels(e.getKey(), e.getValue());
    }
  }

  @Override
  public void close() {
    closed = true;
    leading = false;
    hostWatch.close();
    plannedMoves.ifPresent(PlannedMoves::close);
    if (ownsInformers) {
      informers.close();
    }
    loop.close(Duration.ofSeconds(5));
  }
}

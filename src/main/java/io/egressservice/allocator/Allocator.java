package io.egressservice.allocator;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.informers.ClusterInformers;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.ObjectRef;
import io.fabric8.kubernetes.api.model.Event;
import io.fabric8.kubernetes.api.model.EventBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import java.time.Instant;
import java.time.format.DateTimeFormatter;
import java.time.temporal.ChronoUnit;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceStatus;
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
 */
public final class Allocator implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);
  static final String COMPONENT = "egress-service-allocator";
  private static final int STATUS_ATTEMPTS = 5;
  private static final long MAX_BACKOFF_MS = 30_000;
  /**
   * Passes start at least this far apart, so a burst of endpoint churn is decided in a few passes; a host choice
   * 250 ms later changes nothing that matters. The first event after a quiet spell still runs a pass at once.
   */
  static final long MIN_PASS_SPACING_NANOS = TimeUnit.MILLISECONDS.toNanos(250);

  private final KubernetesClient client;
  private final AllocatorConfig config;
  private final String identity;
  private final ScheduledExecutorService worker;
  private final AtomicBoolean queued = new AtomicBoolean();
  private volatile long lastPassStartNanos = System.nanoTime() - MIN_PASS_SPACING_NANOS;
  private volatile boolean leading;
  private final AtomicLong term = new AtomicLong();
  private volatile boolean closed;
  private int failures;
  /** Last reported outcome per service, this term; worker thread only. */
  private final Map<ObjectRef, Outcome> reported = new HashMap<>();
  /** The term {@link #reported} belongs to; worker thread only. */
  private long reportedTerm = -1;

  private final ClusterInformers informers;
  private final boolean ownsInformers;
  private final AllocatorMetrics metrics;

  private final AtomicLong passes = new AtomicLong();
  private final AtomicLong statusWrites = new AtomicLong();
  private final AtomicLong labelPatches = new AtomicLong();
  private final AtomicLong eventsWritten = new AtomicLong();
  private final AtomicLong statusConflicts = new AtomicLong();
  private final AtomicLong fullPasses = new AtomicLong();
  private final AtomicLong servicesEvaluated = new AtomicLong();
  private volatile int lastPassEvaluated;

  /** EgressServices a change touched since the last pass (handler threads add, the worker drains). */
  private final Set<ObjectRef> touched = ConcurrentHashMap.newKeySet();
  /** A Node changed, or the probes' verdict on one. */
  private final AtomicBoolean nodesChanged = new AtomicBoolean();
  /** The next pass decides everything from the caches. */
  private final AtomicBoolean fullNeeded = new AtomicBoolean(true);
  private final AllocatorObjects objects;
  /** Worker thread only. */
  private final IncrementalAllocation allocation;

  private record Outcome(String uid, String host, Reason reason) {}

  /** Which hosts are unreachable; written by probe threads, read by the worker. Guarded by itself. */
  private final HostHealth health;
  /** When each unreachable node was found unreachable (monotonic), for the failover time. Guarded by health. */
  private final Map<String, Long> lostAtNanos = new HashMap<>();
  private AgentProber prober;
  /** The probe targets need computing again (a Node, or a host in some status, changed). */
  private final AtomicBoolean probeTargetsDirty = new AtomicBoolean(true);
  /** Whether this replica suspects its own path to the nodes now (hysteresis over {@link HostHealth}'s judgment). */
  private final AtomicBoolean selfSuspected = new AtomicBoolean();
  /** When the judgment last said "suspected" (monotonic); guarded by health. */
  private long lastSuspectedNanos;
  private Optional<PlannedMoves> plannedMoves = Optional.empty();
  private final List<Double> failoverSeconds = new java.util.concurrent.CopyOnWriteArrayList<>();
  private final Map<ObjectRef, Long> lastHostChangeEpochSeconds = new java.util.concurrent.ConcurrentHashMap<>();

  private static final class NotLeadingException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    NotLeadingException() {
      super("not the leader", null, false, false);
    }
  }

  /** An allocator with informers of its own (resync {@link AllocatorConfig#resyncPeriod()}), closed with it. */
  public Allocator(KubernetesClient client, AllocatorConfig config, String identity) {
    this(client, config, identity, new AllocatorMetrics());
  }

  /** The same, counting into {@code metrics}. */
  public Allocator(KubernetesClient client, AllocatorConfig config, String identity, AllocatorMetrics metrics) {
    this(client, ClusterInformers.create(client, config.resyncPeriod()), true, config, identity, metrics);
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
    this.health = new HostHealth(config.probes().health());
    this.objects = new AllocatorObjects(informers);
    this.allocation = new IncrementalAllocation(config.endpointTrust());
    this.worker = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "egress-allocator-" + identity);
      t.setDaemon(true);
      return t;
    });
  }

  /** Starts the informers; nothing is written until {@link #startLeading()}. */
  public synchronized void start() {
    listen(EgressService.class, egressServiceEvents());
    listen(Service.class, serviceEvents());
    listen(EndpointSlice.class, sliceEvents());
    listen(Node.class, nodeEvents());
    long resync = config.resyncPeriod().toMillis();
    if (resync > 0) {
      try {
        worker.scheduleWithFixedDelay(this::requestFullPass, resync, resync, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // closed
      }
    }
    plannedMoves = Optional.of(new PlannedMoves(client, config.plannedMoves(), config.probes(), name ->
        objects.nodeObjects().stream().filter(n -> name.equals(n.getMetadata().getName())).findFirst()
            .flatMap(Allocator::internalIp), this::touch, () -> leading && !closed, identity));
    if (config.probes().enabled()) {
      prober = new AgentProber(config.probes().interval(), config.probes().timeout(), config.probes().threads(),
          config.probes().netns(), this::probed);
      long every = config.probes().interval().toMillis();
      try {
        worker.scheduleWithFixedDelay(this::refreshProbeTargets, every, every, TimeUnit.MILLISECONDS);
      } catch (java.util.concurrent.RejectedExecutionException e) {
        // closed
      }
    }
    informers.start();
  }

  private void probed(String node, long seq, ProbeResult result) {
    boolean changed;
    boolean unreachable;
    Optional<HostHealth.Suspicion> judged = Optional.empty();
    long now = System.nanoTime();
    synchronized (health) {
      changed = health.record(node, seq, result, now);
      unreachable = health.isUnreachable(node);
      if (changed && unreachable) {
        lostAtNanos.put(node, health.lastAnswerNanos(node));
      } else if (changed) {
        lostAtNanos.remove(node);
      }
      // Judged only when it can change: on a miss, or while suspected (to see it end). A healthy cluster costs
      // nothing here.
      if (result == ProbeResult.NO_ANSWER || selfSuspected.get()) {
        HostHealth.Suspicion s = health.suspicion(now);
        if (s.suspected()) {
          lastSuspectedNanos = now;
        }
        judged = Optional.of(s);
      }
    }
    judged.ifPresent(s -> judgeSelf(s, now));
    if (changed) {
      if (unreachable) {
        LOG.warn("{}: node {} is unreachable ({}): drained, its services move", identity, node,
            result == ProbeResult.NO_ANSWER ? "its agent's health port does not answer"
                : "its agent has not been healthy for " + config.probes().health().agentDownGrace().toSeconds() + " s");
      } else {
        LOG.info("{}: node {} answers its health probes again: it may host services", identity, node);
      }
      nodesChanged.set(true);
      requestPass();
    }
  }

  /**
   * Begins an episode of self-suspicion when the judgment says so; ends it once the judgment has been clear for the
   * suspicion window (so one episode is one log line, one Event, not one per flicker).
   */
  private void judgeSelf(HostHealth.Suspicion s, long now) {
    if (s.suspected()) {
      if (selfSuspected.compareAndSet(false, true)) {
        LOG.warn("{}: {} of {} probed nodes fail at once ({}): suspecting this allocator's own path to the nodes, "
            + "keeping every host and draining nothing until most of them answer again", identity,
            s.failing().size(), s.judged(), String.join(", ", s.failing()));
        metrics.selfSuspected(true);
        for (Listener l : listeners) {
          l.selfSuspected(true, s);
        }
      }
      return;
    }
    long since;
    synchronized (health) {
      since = lastSuspectedNanos;
    }
    if (now - since >= config.probes().health().suspicionWindow().toNanos()
        && selfSuspected.compareAndSet(true, false)) {
      LOG.info("{}: most probed nodes answer again ({} of {} failing): no longer suspecting this allocator's own "
          + "path; silent nodes are drained again", identity, s.failing().size(), s.judged());
      metrics.selfSuspected(false);
      for (Listener l : listeners) {
        l.selfSuspected(false, s);
      }
    }
  }

  /** The nodes this replica probes now (hosts, candidates, unreachable nodes). */
  public Set<String> probedNodes() {
    synchronized (health) {
      return health.tracked();
    }
  }

  /** Whether this replica suspects its own path to the nodes now (and so drains nothing new). */
  public boolean selfSuspected() {
    return selfSuspected.get();
  }

  /** Nodes the health probes hold unreachable now. */
  public Set<String> unreachableNodes() {
    synchronized (health) {
      return health.unreachable();
    }
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

  private final List<Listener> listeners = new java.util.concurrent.CopyOnWriteArrayList<>();

  public void addListener(Listener l) {
    listeners.add(Objects.requireNonNull(l));
  }

  /** Seconds from an unreachable host's last answer to each of its services' new status.host written, in order. */
  public List<Double> failoverSeconds() {
    return List.copyOf(failoverSeconds);
  }

  /** When this instance last wrote a different status.host of each service (epoch seconds). */
  public Map<ObjectRef, Long> lastHostChange() {
    return Map.copyOf(lastHostChangeEpochSeconds);
  }

  /** Where every handler is registered: the informers' own registration, which also delivers backfilled objects. */
  private <T extends HasMetadata> void listen(Class<T> kind, ResourceEventHandler<T> handler) {
    informers.addEventHandler(kind, handler);
  }

  /**
   * A resync delivers every cached object again as an update of itself: the allocator's own periodic full pass
   * stands for it, so those updates are ignored.
   */
  private static boolean resync(Object before, Object after) {
    return before == after;
  }

  private ResourceEventHandler<EgressService> egressServiceEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(EgressService es) {
        touch(PlanInputs.ref(es));
      }

      @Override
      public void onUpdate(EgressService before, EgressService after) {
        if (!resync(before, after)) {
          touch(PlanInputs.ref(after));
        }
      }

      @Override
      public void onDelete(EgressService es, boolean finalStateUnknown) {
        touch(PlanInputs.ref(es));
      }

      @Override
      public void onNothing() {
        requestFullPass();
      }
    };
  }

  private ResourceEventHandler<Service> serviceEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(Service svc) {
        touchIfOptedIn(PlanInputs.ref(svc));
      }

      @Override
      public void onUpdate(Service before, Service after) {
        if (!resync(before, after)) {
          touchIfOptedIn(PlanInputs.ref(after));
        }
      }

      @Override
      public void onDelete(Service svc, boolean finalStateUnknown) {
        touchIfOptedIn(PlanInputs.ref(svc));
      }
    };
  }

  private ResourceEventHandler<EndpointSlice> sliceEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(EndpointSlice slice) {
        AllocatorObjects.serviceOf(slice).ifPresent(Allocator.this::touchIfOptedIn);
      }

      @Override
      public void onUpdate(EndpointSlice before, EndpointSlice after) {
        if (resync(before, after)) {
          return;
        }
        Optional<ObjectRef> was = AllocatorObjects.serviceOf(before);
        Optional<ObjectRef> is = AllocatorObjects.serviceOf(after);
        is.ifPresent(Allocator.this::touchIfOptedIn);
        if (!was.equals(is)) {
          was.ifPresent(Allocator.this::touchIfOptedIn);
        }
      }

      @Override
      public void onDelete(EndpointSlice slice, boolean finalStateUnknown) {
        AllocatorObjects.serviceOf(slice).ifPresent(Allocator.this::touchIfOptedIn);
      }
    };
  }

  private ResourceEventHandler<Node> nodeEvents() {
    return new ResourceEventHandler<>() {
      @Override
      public void onAdd(Node n) {
        nodesChanged();
      }

      @Override
      public void onUpdate(Node before, Node after) {
        // Nodes change status every few seconds; only what the allocator reads matters.
        if (!resync(before, after) && !AllocatorInputs.node(before).equals(AllocatorInputs.node(after))) {
          nodesChanged();
        }
      }

      @Override
      public void onDelete(Node n, boolean finalStateUnknown) {
        nodesChanged();
      }
    };
  }

  private void touch(ObjectRef ref) {
    touched.add(ref);
    probeTargetsDirty.set(true);
    requestPass();
  }

  private void touchIfOptedIn(ObjectRef ref) {
    if (objects.optedIn(ref)) {
      touch(ref);
    }
  }

  private void nodesChanged() {
    nodesChanged.set(true);
    probeTargetsDirty.set(true);
    requestPass();
  }

  private void requestFullPass() {
    fullNeeded.set(true);
    requestPass();
  }

  /** Begins a leadership term: forgets reported outcomes and runs a pass. */
  public void startLeading() {
    LOG.info("{}: leading, allocating egress service hosts", identity);
    term.incrementAndGet();
    fullNeeded.set(true);
    leading = true;
    metrics.leading(true);
    submit(this::runPass);
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

  /** Whether every informer's watch is open ({@link ClusterInformers#watching()}). */
  public boolean watching() {
    return informers.watching();
  }

  /** Waits (bounded) until a pass in progress, if any, has finished. */
  void awaitIdle(long timeoutMillis) {
    try {
      worker.submit(() -> { }).get(timeoutMillis, TimeUnit.MILLISECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    } catch (Exception e) {
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
    return statusWrites.get();
  }

  /** Number of successful node label patches by this instance. */
  public long labelPatches() {
    return labelPatches.get();
  }

  /** Number of 409 Conflict answers to status writes (each retried). */
  public long statusConflicts() {
    return statusConflicts.get();
  }

  /** Number of Events written by this instance. */
  public long eventsWritten() {
    return eventsWritten.get();
  }

  void requestPass() {
    if (!closed && queued.compareAndSet(false, true)) {
      long wait = lastPassStartNanos + MIN_PASS_SPACING_NANOS - System.nanoTime();
      if (wait <= 0) {
        submit(this::runPass);
      } else {
        schedule(this::runPass, wait, TimeUnit.NANOSECONDS);
      }
    }
  }

  private void submit(Runnable r) {
    try {
      worker.execute(r);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closed
    }
  }

  private void schedule(long delayMillis) {
    schedule(this::requestPass, delayMillis, TimeUnit.MILLISECONDS);
  }

  private void schedule(Runnable task, long delay, TimeUnit unit) {
    try {
      worker.schedule(task, delay, unit);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      // closed
    }
  }

  private void runPass() {
    queued.set(false);
    lastPassStartNanos = System.nanoTime();
    if (!leading || closed) {
      return;
    }
    if (!informers.hasSynced()) {
      schedule(100);
      return;
    }
    long t = term.get();
    if (t != reportedTerm) {
      reported.clear();
      reportedTerm = t;
    }
    try {
      if (fullNeeded.getAndSet(false)) {
        fullPass();
      } else {
        incrementalPass();
      }
      failures = 0;
    } catch (NotLeadingException e) {
      fullNeeded.set(true);
      LOG.debug("{}: pass abandoned, leadership lost", identity);
    } catch (RuntimeException e) {
      // What was decided may not have been written: the retry decides and checks everything again.
      fullNeeded.set(true);
      failures++;
      long delay = Math.min(MAX_BACKOFF_MS, 100L << Math.min(failures, 20));
      LOG.warn("{}: allocation pass failed (attempt {}), retrying in {} ms: {}", identity, failures, delay,
          e.toString());
      schedule(delay);
    }
  }

  /** Drops what the touched set holds now; what handlers add from here on is for the next pass. */
  private Set<ObjectRef> drainTouched() {
    Set<ObjectRef> out = new java.util.TreeSet<>();
    for (java.util.Iterator<ObjectRef> i = touched.iterator(); i.hasNext(); ) {
      out.add(i.next());
      i.remove();
    }
    return out;
  }

  private void fullPass() {
    drainTouched();
    nodesChanged.set(false);
    Set<String> unreachable = unreachableNodes();
    List<NodeState> nodes = objects.nodes(unreachable);
    IncrementalAllocation.Step step = allocation.full(objects.readAll(), nodes);
    fullPasses.incrementAndGet();
    apply(step, true, true, unreachable);
  }

  private void incrementalPass() {
    Set<ObjectRef> refs = drainTouched();
    boolean nodes = nodesChanged.getAndSet(false);
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
   * Writes what the step decided: status, Events, metrics, probe targets (when the hosts or the nodes changed),
   * node labels.
   */
  private void apply(IncrementalAllocation.Step step, boolean full, boolean nodesChanged, Set<String> unreachable) {
    passes.incrementAndGet();
    servicesEvaluated.addAndGet(step.evaluated().size());
    lastPassEvaluated = step.evaluated().size();
    metrics.pass(full, step.evaluated().size());
    Map<String, NodeState> nodeByName = allocation.nodesByName();

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
      if (!statusOk && writeStatus(es, d.host())) {
        move = plannedMoves.flatMap(m -> m.written(es, oldHost, d.host())).orElse("");
        HostMoves.reason(state, d.host(), nodeByName).ifPresent(reason -> {
          metrics.hostMoved(reason);
          LOG.info("{}: {} host moved from {} to {} ({})", identity, d.ref(), state.statusHost(), d.host(), reason);
        });
        long epoch = Instant.now().getEpochSecond();
        lastHostChangeEpochSeconds.put(d.ref(), epoch);
        for (Listener l : listeners) {
          l.hostChanged(d.ref(), oldHost, d.host(), epoch);
        }
        if (!oldHost.isEmpty() && !oldHost.equals(io.egressservice.plan.EgressServiceInfo.HOST_ALL)) {
          move = "moved from node " + oldHost + (unreachable.contains(oldHost)
              ? " (" + HostChooser.AGENT_UNREACHABLE + ")" : " (no longer a candidate)") + ": " + move;
          Long lost;
          synchronized (health) {
            lost = lostAtNanos.get(oldHost);
          }
          if (lost != null && d.reason() == Reason.HOST_ALLOCATED) {
            double seconds = (System.nanoTime() - lost) / 1e9;
            failoverSeconds.add(seconds);
            for (Listener l : listeners) {
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
        LOG.info("{}: {} host \"{}\" ({}): {}{}", identity, d.ref(), d.host(), d.reason().eventReason(), move,
            d.message());
        event(es, d.reason().allocated() ? "Normal" : "Warning", d.reason().eventReason(), move + d.message());
        d.labelProblem().ifPresent(p -> event(es, "Warning", Reason.LABEL_NOT_SET,
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
      Set<ObjectRef> present = new java.util.HashSet<>();
      step.evaluated().forEach(d -> present.add(d.ref()));
      reported.keySet().retainAll(present);
      lastHostChangeEpochSeconds.keySet().retainAll(present);
      metrics.allocations(step.evaluated().stream().map(Allocator::allocation).toList());
    }
    if (prober != null && (full || nodesChanged || step.hostsChanged())) {
      probeTargetsDirty.set(false);
      probeHosts(allocation.hostedNodes(), objects.nodes(unreachable), objects.nodeObjects(), unreachable);
    }

    for (Map.Entry<String, Map<String, Boolean>> e : step.labelChanges().entrySet()) {
      patchLabels(e.getKey(), e.getValue());
    }
  }

  private static AllocatorMetrics.Allocation allocation(Decision d) {
    return new AllocatorMetrics.Allocation(d.ref().namespace(), d.ref().name(), d.host(), d.reason().eventReason());
  }

  /**
   * Every replica, leader or not, every probe interval: when a Node or an EgressService changed, the probe targets
   * from the caches (the hosts in {@code status.host}; the leader adds the hosts it just chose).
   */
  private void refreshProbeTargets() {
    if (prober == null || closed || !probeTargetsDirty.get() || !informers.hasSynced()) {
      return;
    }
    probeTargetsDirty.set(false);
    try {
      Set<String> hosts = new java.util.TreeSet<>();
      for (EgressService es : informers.egressServices().getStore().list()) {
        String h = es.getStatus() == null ? null : es.getStatus().getHost();
        if (h != null && !h.isEmpty() && !h.equals(io.egressservice.plan.EgressServiceInfo.HOST_ALL)) {
          hosts.add(h);
        }
      }
      if (leading) {
        hosts.addAll(allocation.hostedNodes());
      }
      Set<String> unreachable = unreachableNodes();
      probeHosts(hosts, objects.nodes(unreachable), objects.nodeObjects(), unreachable);
    } catch (RuntimeException e) {
      probeTargetsDirty.set(true);
      LOG.warn("{}: could not update the host probes' targets: {}", identity, e.toString());
    }
  }

  /**
   * Probes the nodes that host a LoadBalancerIP service, the unreachable ones (to see them return), and up to
   * {@link HostProbes#candidates()} other nodes that could host (Ready, schedulable, not being deleted; by name):
   * O(hosts) TCP connections, no API request.
   */
  private void probeHosts(Set<String> hosts, List<NodeState> nodeStates,
      List<io.fabric8.kubernetes.api.model.Node> nodeObjects, Set<String> unreachable) {
    Set<String> wanted = ProbeTargets.select(hosts, unreachable, nodeStates, config.probes().candidates());
    Map<String, java.net.InetSocketAddress> targets = new HashMap<>();
    for (io.fabric8.kubernetes.api.model.Node n : nodeObjects) {
      String name = n.getMetadata().getName();
      if (wanted.contains(name)) {
        internalIp(n).ifPresent(ip -> targets.put(name, new java.net.InetSocketAddress(ip, config.probes().port())));
      }
    }
    synchronized (health) {
      health.retain(targets.keySet());
      long now = System.nanoTime();
      targets.keySet().forEach(n -> health.track(n, now));
      lostAtNanos.keySet().retainAll(health.unreachable());
    }
    prober.probe(targets);
  }

  /** The node's first InternalIP (where its hostNetwork agent listens). */
  private static java.util.Optional<java.net.InetAddress> internalIp(io.fabric8.kubernetes.api.model.Node n) {
    if (n.getStatus() == null || n.getStatus().getAddresses() == null) {
      return java.util.Optional.empty();
    }
    return n.getStatus().getAddresses().stream()
        .filter(a -> "InternalIP".equals(a.getType()) && a.getAddress() != null)
        .map(a -> io.egressservice.ip.IpPrefix.tryParse(a.getAddress()))
        .flatMap(java.util.Optional::stream)
        .filter(io.egressservice.ip.IpPrefix::isHost)
        .findFirst()
        .map(p -> {
          try {
            return java.net.InetAddress.getByAddress(p.addressBytes());
          } catch (java.net.UnknownHostException e) {
            throw new IllegalStateException(e);
          }
        });
  }

  private void ensureLeading() {
    if (!leading || closed) {
      throw new NotLeadingException();
    }
  }

  /** True when this call wrote {@code host}; false when the object is gone or already had it. */
  private boolean writeStatus(EgressService cached, String host) {
    EgressService copy = client.getKubernetesSerialization().clone(cached);
    String ns = cached.getMetadata().getNamespace();
    String name = cached.getMetadata().getName();
    for (int attempt = 1; ; attempt++) {
      ensureLeading();
      EgressServiceStatus status = new EgressServiceStatus();
      status.setHost(host);
      copy.setStatus(status);
      try {
        client.resource(copy).updateStatus();
        statusWrites.incrementAndGet();
        return true;
      } catch (KubernetesClientException e) {
        if (e.getCode() == 404) {
          return false; // deleted meanwhile; its informer event requests a new pass
        }
        if (e.getCode() != 409 || attempt == STATUS_ATTEMPTS) {
          throw e;
        }
        statusConflicts.incrementAndGet();
        LOG.debug("{}: conflict writing status of {}/{}, retrying", identity, ns, name);
        copy = client.resources(EgressService.class).inNamespace(ns).withName(name).get();
        if (copy == null) {
          return false;
        }
        if (copy.getStatus() != null && host.equals(copy.getStatus().getHost())) {
          return false;
        }
      }
    }
  }

  private void patchLabels(String node, Map<String, Boolean> changes) {
    ensureLeading();
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    ObjectNode labels = root.putObject("metadata").putObject("labels");
    changes.forEach((key, set) -> {
      if (set) {
        labels.put(key, "");
      } else {
        labels.putNull(key);
      }
    });
    try {
      client.nodes().withName(node).patch(PatchContext.of(PatchType.JSON_MERGE), root.toString());
      labelPatches.incrementAndGet();
      LOG.info("{}: node {} labels {}", identity, node, changes);
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        throw e;
      }
    }
  }

  private void event(EgressService es, String type, String reason, String message) {
    if (!leading || closed) {
      return;
    }
    Instant now = Instant.now();
    String ts = DateTimeFormatter.ISO_INSTANT.format(now.truncatedTo(ChronoUnit.SECONDS));
    String base = es.getMetadata().getName();
    if (base.length() > 200) {
      base = base.substring(0, 200);
    }
    Event ev = new EventBuilder()
        .withNewMetadata()
            .withNamespace(es.getMetadata().getNamespace())
            .withName(base + "." + UUID.randomUUID().toString().replace("-", "").substring(0, 16))
        .endMetadata()
        .withNewInvolvedObject()
            .withApiVersion(es.getApiVersion())
            .withKind(es.getKind())
            .withNamespace(es.getMetadata().getNamespace())
            .withName(es.getMetadata().getName())
            .withUid(es.getMetadata().getUid())
            .withResourceVersion(es.getMetadata().getResourceVersion())
        .endInvolvedObject()
        .withType(type)
        .withReason(reason)
        .withMessage(message.length() > 1024 ? message.substring(0, 1024) : message)
        .withFirstTimestamp(ts)
        .withLastTimestamp(ts)
        .withCount(1)
        .withNewSource().withComponent(COMPONENT).endSource()
        .withReportingComponent(COMPONENT)
        .withReportingInstance(identity)
        .build();
    try {
      client.v1().events().inNamespace(es.getMetadata().getNamespace()).resource(ev).create();
      eventsWritten.incrementAndGet();
    } catch (KubernetesClientException e) {
      LOG.warn("{}: could not write Event {} for {}: {}", identity, reason, PlanInputs.ref(es), e.getMessage());
    }
  }

  @Override
  public void close() {
    closed = true;
    leading = false;
    if (prober != null) {
      prober.close();
    }
    plannedMoves.ifPresent(PlannedMoves::close);
    if (ownsInformers) {
      informers.close();
    }
    worker.shutdownNow();
    try {
      worker.awaitTermination(5, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

}

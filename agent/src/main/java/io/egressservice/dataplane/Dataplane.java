package io.egressservice.dataplane;

import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.Kernel;
import io.egressservice.kernel.NftException;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.RouteChange;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleChange;
import io.egressservice.nft.DrainNftables;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.GuardNftables;
import io.egressservice.nft.MarkNftables;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.NoHostNftables;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.RuleSpec;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.function.BooleanSupplier;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The kernel side of one network namespace: observes what the agent owns, diffs it against the plan
 * and applies the difference. Every reconcile (an event, the periodic resync, a drift notification,
 * a one-shot {@code apply}) runs the same {@link #reconcile}; an API change while the kernel holds the last plan may
 * take the fast path ({@link #reconcileChanged}). The parts: {@link KernelView} reads the kernel, {@link Differ}
 * diffs, {@link ChangeApplier} writes, {@link FlowRestarts} restarts the flows whose treatment changed, and the side
 * tables ({@link TunnelGuard}, {@link NoHostSync}, {@link FlowDrain}) follow the plan around them.
 */
public final class Dataplane implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(Dataplane.class);

  private final Kernel kernel;
  private final EgressNftables nft;
  private final MarkNftables marks;
  private final GenerationSource generation;
  private final SteeringDataplane steering;
  private final NoHostSync noHost;
  private final TunnelGuard guard;
  private final FlowDrain drain;
  private final KernelView view;
  private final FlowRestarts restarts;
  private final ChangeApplier applier;
  /** What the rules in the kernel were applied for, to name a deleted one (see {@link AppliedRules}). */
  private final AppliedRules appliedRules = AppliedRules.none();
  /** The last full reconcile succeeded (or the fast path since): the kernel holds what it applied. */
  private boolean viewCurrent;
  private long fastPaths;
  private long fallbacks;

  private Dataplane(Kernel kernel, EgressNftables nft, MarkNftables marks,
      GenerationSource generation, int priority, int protocol) {
    // Each side table's commit moves the nftables generation: the SNAT and mark caches must not take it for an edit.
    Runnable otherTableCommitted = () -> {
      nft.otherTableCommitted();
      marks.otherTableCommitted();
    };
    this.kernel = kernel;
    this.steering = new SteeringDataplane(kernel, protocol);
    this.noHost = new NoHostSync(kernel, otherTableCommitted);
    this.guard = new TunnelGuard(kernel, otherTableCommitted);
    this.drain = new FlowDrain(kernel, priority, protocol, otherTableCommitted);
    this.nft = nft;
    this.marks = marks;
    this.generation = generation;
    this.view = new KernelView(kernel, nft, marks, steering, priority, protocol);
    this.restarts = new FlowRestarts(kernel.flows(), guard, drain, view::knownMarks);
    this.applier = new ChangeApplier(kernel, nft, marks, steering, restarts);
  }

  /** The dataplane on {@code kernel}; {@link #close()} closes the kernel too (also when this throws). */
  public static Dataplane open(Kernel kernel, int priority, int protocol) {
    EgressNftables nft = null;
    MarkNftables marks = null;
    try {
      nft = EgressNftables.open(kernel);
      marks = MarkNftables.open(kernel);
      return new Dataplane(kernel, nft, marks, kernel.openGeneration(), priority, protocol);
    } catch (NetlinkException | NftException e) {
      closeAfterFailedOpen(kernel, nft, marks);
      throw new DataplaneException(e.getMessage(), e);
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      closeAfterFailedOpen(kernel, nft, marks);
      throw new DataplaneException("cannot open the dataplane of " + kernel.describe() + ": " + e.getMessage(), e);
    }
  }

  private static void closeAfterFailedOpen(Kernel kernel, EgressNftables nft, MarkNftables marks) {
    if (marks != null) {
      marks.close();
    }
    if (nft != null) {
      nft.close();
    }
    kernel.close();
  }

  public String describe() {
    return kernel.describe();
  }

  /** The kernel this dataplane reads and writes. */
  public Kernel kernel() {
    return kernel;
  }

  /** How often the nft table was listed or its cached listing reused. */
  public EgressNftables.ObserveStats nftObserveStats() {
    return nft.observeStats();
  }

  /** The same for the mark part of the table (mark mode), which has its own cache. */
  public EgressNftables.ObserveStats markObserveStats() {
    return marks.observeStats();
  }

  /**
   * The nftables ruleset generation of this namespace (it changes with every nft commit, ours or
   * anyone's), for cheap drift polling; empty when it cannot be read.
   */
  public OptionalLong nftGeneration() {
    try {
      return OptionalLong.of(generation.read());
    } catch (RuntimeException e) {
      return OptionalLong.empty();
    }
  }

  /**
   * Whether the SNAT and mark listings are the kernel's state at {@code generation}: every nftables commit up to it
   * was one of ours (each is told to both caches as it happens). False when someone else committed since the tables
   * were last listed, in particular during a reconcile, after its listing: such an edit is drift the reconcile did
   * not see.
   */
  public boolean nftListedAt(long generation) {
    return nft.listedAt(generation) && marks.listedAt(generation);
  }

  /**
   * The owned state: our rules (P and P-1, our protocol, both families), our throw routes (our
   * protocol, any table: the tables themselves may be someone else's), our nft table, and the steering
   * device with its routes.
   */
  public ObservedState observe() {
    return view.observe();
  }

  /** Names in {@code spec.network} to tables: VRF devices of this namespace, then rt_tables. */
  public NetworkResolution resolveNetworks(Collection<String> networks, RtTables rtTables) {
    return view.resolveNetworks(networks, rtTables);
  }

  /**
   * Every address on every interface of this namespace ({@code ip addr show}), both families, as host
   * prefixes: the node's own addresses, whether or not its Node object lists them.
   */
  public List<IpPrefix> localAddresses() {
    return view.localAddresses();
  }

  /**
   * What the plan needs to know of this node: how the given {@code spec.network} values resolve
   * here, the node's addresses, and (from {@code observed}, no second dump) the marks in use.
   */
  public KernelFacts facts(Collection<String> networks, ObservedState observed) {
    return view.facts(networks, observed, view.links());
  }

  /**
   * The node facts without a dump when nothing changed (see the contract in the issue-20 notes): links and
   * addresses as last read, re-read after {@link #invalidateFacts()}; rt_tables re-read when its files changed;
   * marks and steering tables from the last observation, as updated by the reconciles that succeeded since.
   * Before any observation, one (a dump) is made.
   */
  public KernelFacts currentFacts(Collection<String> networks) {
    return view.currentFacts(networks);
  }

  /**
   * Whether {@code added} (a route notification) gives a network's table its first route of a family, as the last
   * facts read it: a no-route warning may end, so the caller reconciles now rather than at the resync.
   */
  public boolean mayEndNoRouteWarning(io.egressservice.netlink.Route added) {
    return view.mayEndNoRouteWarning(added);
  }

  /** The links or addresses may have changed (a notification, an overflow, a resync): the next facts read them. */
  public void invalidateFacts() {
    view.invalidateFacts();
    guard.invalidateUnderlay();
  }

  /**
   * The node's plan made by {@code planner} from this node's facts (how {@code networks}, the {@code spec.network}
   * values in play, resolve here; its addresses; the marks and steering tables in use): one observation of the owned
   * state feeds both those facts and the diff that {@link #reconcile(NodePlan)} applies.
   */
  public NodePlan plan(Collection<String> networks, Function<KernelFacts, DesiredState> planner) {
    long start = System.nanoTime();
    ObservedState observed = observe();
    long observeNanos = System.nanoTime() - start;
    List<Link> links = view.links();
    DesiredState desired = planner.apply(view.facts(networks, observed, links));
    observed = view.withReversePath(desired, observed, links);
    return new NodePlan(desired, Differ.wantedRules(desired), observed, observeNanos,
        view.steeringMtu(desired, links));
  }

  /** The MTU the steering device should have for the plan's hosts (only looked up while steering is wanted). */
  public int steeringMtu(DesiredState desired) {
    return view.steeringMtu(desired);
  }

  /** What {@link #reconcile(NodePlan)} would change (for {@code --dry-run}). */
  public static ChangeSet diff(NodePlan plan) {
    return Differ.diff(plan.desired(), plan.wantedRules(), plan.observed(), plan.steeringMtu());
  }

  /** Diff the plan against the observation it was made with, and apply. */
  public ApplyReport reconcile(NodePlan plan) {
    // The guard first: the steering port is guarded before the device that listens on it is created.
    List<String> guarded = guard.sync(plan.desired());
    FlowRestarts.EarlyRestart early = restarts.forFullReconcile(plan.desired());
    ChangeSet changes = Differ.diff(plan.desired(), plan.wantedRules(), plan.observed(), plan.steeringMtu(),
        appliedRules);
    ApplyReport applied = withHolds(applier.apply(changes, Optional.empty(), ChangeApplier.RuleAdds.KNOWN_ABSENT, early), plan.desired());
    ApplyReport report = withGuard(guarded, applied, guard.afterApply());
    afterFullReconcile(plan.desired(), plan.wantedRules(), report);
    return new ApplyReport(report.applied(), report.failures(), report.kernelNanos() + plan.observeNanos());
  }

  /** Observe, diff, apply. */
  public ApplyReport reconcile(DesiredState desired) {
    long start = System.nanoTime();
    ObservedState observed = observe();
    if (desired.ruleMode() == RuleMode.MARK) {
      observed = view.withReversePath(desired, observed, view.links());
    }
    return reconcile(new NodePlan(desired, Differ.wantedRules(desired), observed, System.nanoTime() - start,
        view.steeringMtu(desired)));
  }

  /**
   * The report with the guard table's failures in the order it was written: before the rest ({@code before}) and
   * after the rules ({@code after}, {@link TunnelGuard#afterApply}).
   */
  private static ApplyReport withGuard(List<String> before, ApplyReport report, List<String> after) {
    if (before.isEmpty() && after.isEmpty()) {
      return report;
    }
    List<String> failures = new ArrayList<>(before);
    failures.addAll(report.failures());
    failures.addAll(after);
    return new ApplyReport(report.applied(), failures, report.kernelNanos());
  }

  /** Writes the no-host table when the held endpoints changed; then, when all went well, the flows restart. */
  private ApplyReport withHolds(ApplyReport report, DesiredState desired) {
    long t = System.nanoTime();
    List<String> failures = new ArrayList<>(report.failures());
    noHost.sync(desired, t).ifPresent(failures::add);
    if (report.succeeded()) {
      restarts.afterFullReconcile(desired, failures);
    }
    return new ApplyReport(report.applied(), failures, report.kernelNanos() + System.nanoTime() - t);
  }

  private void afterFullReconcile(DesiredState desired, Map<Rule, RuleSpec> wanted, ApplyReport report) {
    viewCurrent = report.succeeded();
    appliedRules.afterFullReconcile(wanted, report.succeeded());
    if (report.succeeded()) {
      view.learnApplied(desired);
    }
  }

  /**
   * The fast path. Precondition, which the caller guarantees: the kernel holds {@code previous} in
   * full. Applies only what differs between {@code previous} and {@code next} for the services in {@code
   * changed}: their rules (adds without the kernel's duplicate scan, see {@link ChangeApplier#apply}), SNAT and
   * mark elements (one transaction each, planned from {@code previous}, no listing; the listing caches keep up),
   * held and steered endpoints (the no-host table by element), and the conntrack restart of those endpoints only.
   * No rule, route, link or address dump, no nft listing. Falls back to {@link #reconcile(DesiredState)} (one
   * observation, the full diff) when anything node-wide differs, when the view is not known to be current (no
   * successful reconcile yet, or the last one failed), or when a change needs what only a listing tells (the SNAT
   * table's first creation, a base repair). Never throws for kernel refusals.
   */
  public ApplyReport reconcileChanged(DesiredState previous, DesiredState next, Set<ObjectRef> changed) {
    Optional<String> refusal = fastPathRefusal(previous, next);
    if (refusal.isPresent()) {
      fallbacks++;
      LOG.debug("{}: full reconcile instead of the fast path: {}", describe(), refusal.get());
      return reconcile(next);
    }
    ServiceSlices.Slice before = ServiceSlices.restrict(previous, changed);
    ServiceSlices.Slice after = ServiceSlices.restrict(next, changed);
    if (!before.nodeRules().equals(after.nodeRules())
        || !ServiceSlices.needsSnatTable(previous) && !after.state().snat().isEmpty()) {
      fallbacks++;
      return reconcile(next);
    }
    DesiredState was = before.state();
    DesiredState now = after.state();
    ObservedState expected = ServiceSlices.expectedObservation(was, view.knownReversePath(),
        ServiceSlices.needsSnatTable(previous));
    // The kernel holds previous, applied by this dataplane: appliedRules names the slice's deleted rules.
    Map<Rule, RuleSpec> wantedNow = Differ.wantedRules(now);
    ChangeSet changes = Differ.diff(now, wantedNow, expected, appliedRules);
    if (changes.ensureNftBase() || changes.nft().replaceInCluster().isPresent() || !changes.srcValidMark().isEmpty()) {
      fallbacks++;
      return reconcile(next);
    }
    Map<IpPrefix, MarkElement> marksWas = ServiceSlices.markElements(was);
    Map<IpPrefix, MarkElement> marksNow = ServiceSlices.markElements(now);
    List<IpPrefix> marksRemoved = new ArrayList<>();
    marksWas.forEach((source, e) -> {
      if (!e.equals(marksNow.get(source))) {
        marksRemoved.add(source);
      }
    });
    List<MarkElement> marksAdded = new ArrayList<>();
    marksNow.forEach((source, e) -> {
      if (!e.equals(marksWas.get(source))) {
        marksAdded.add(e);
      }
    });
    long guardStart = System.nanoTime();
    List<String> guarded = guard.syncChanged(previous, next, changed);
    long guardNanos = System.nanoTime() - guardStart;
    FlowRestarts.EarlyRestart early = restarts.forChanged(was, now, previous, next);
    ApplyReport report = applier.apply(changes,
        Optional.of(new ChangeApplier.KnownElements(expected.nft().snat(), marksRemoved, marksAdded)),
        ChangeApplier.RuleAdds.KNOWN_ABSENT, early);
    appliedRules.afterFastPath(wantedNow);
    fastPaths++;
    long t = System.nanoTime() - guardNanos;
    List<String> failures = new ArrayList<>(guarded);
    failures.addAll(report.failures());
    failures.addAll(guard.afterApply());
    noHost.syncChanged(was, now).ifPresent(failures::add);
    if (failures.isEmpty()) {
      restarts.afterChanged(was, now, next, failures);
    }
    viewCurrent = failures.isEmpty();
    return new ApplyReport(report.applied(), failures, report.kernelNanos() + System.nanoTime() - t);
  }

  /** How often {@link #reconcileChanged} took the fast path, and how often it fell back to a full reconcile. */
  public record FastPathStats(long fastPaths, long fallbacks) {}

  public FastPathStats fastPathStats() {
    return new FastPathStats(fastPaths, fallbacks);
  }

  /** Why the fast path cannot apply {@code previous} to {@code next}, or empty. */
  private Optional<String> fastPathRefusal(DesiredState previous, DesiredState next) {
    if (!viewCurrent || !restarts.started() || !noHost.current() || !guard.current()) {
      return Optional.of("the kernel view is not current (no successful reconcile since the last failure)");
    }
    Optional<String> nodeWide = ServiceSlices.nodeWideDifference(previous, next);
    if (nodeWide.isPresent()) {
      return Optional.of(nodeWide.get() + " changed");
    }
    if (next.ruleMode() == RuleMode.MARK && !next.networkMarks().isEmpty()
        && !view.reversePathReadFor(next.networkMarks().keySet())) {
      return Optional.of("the reverse-path facts were read for other networks");
    }
    return Optional.empty();
  }

  /** Packets the guard table dropped since this agent started: {@code port}, {@code tunnel}, {@code spoofed}, {@code unsteered}. */
  public Map<String, Long> guardDroppedPackets() {
    return guard.droppedPackets();
  }

  /** Packets of endpoints of services without a host dropped, per service ({@code namespace/name}). */
  public Map<String, Long> noHostDroppedPackets() {
    return noHost.droppedPackets();
  }

  /**
   * Applies a change set in its order: route additions, rule additions, the nft transaction, rule
   * deletions, route deletions. A refused
   * request does not stop the others; it is reported, and the kernel holds either the old or the new
   * form of every object, which the next reconcile completes.
   */
  public ApplyReport apply(ChangeSet changes) {
    return applier.apply(changes, Optional.empty(), ChangeApplier.RuleAdds.EXCLUSIVE, FlowRestarts.EarlyRestart.NONE);
  }

  /** Removes everything the agent owns in this namespace, and nothing else. */
  public ApplyReport cleanup() {
    long start = System.nanoTime();
    ObservedState observed = observe();
    List<Change> applied = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    // The SNAT table first: it is the LB IP identity, and a stop cut short (the grace period spent at scale)
    // must not leave an endpoint's address mapped to a service's identity for whoever gets that address next.
    if (observed.nft().tablePresent()) {
      try {
        nft.deleteTable();
        applied.add(new Change(Change.Op.DELETE, Change.Kind.NFT_BASE, Differ.BASE,
            "nft table inet " + EgressNftables.TABLE + " (" + observed.nft().snat().size() + " SNAT element(s))"));
      } catch (NftException e) {
        failures.add("delete nft table inet " + EgressNftables.TABLE + ": " + e.getMessage());
      }
    }
    Map<Rule, Change> described = new HashMap<>();
    List<String> labels = Differ.deletionLabels(observed.rules(), Optional.empty(), observed, appliedRules);
    for (int i = 0; i < observed.rules().size(); i++) {
      Rule r = observed.rules().get(i);
      described.put(r, new Change(Change.Op.DELETE, Change.Kind.RULE, labels.get(i), "rule " + r));
    }
    applier.batch(observed.rules().stream().map(RuleChange::delete).toList(), described, applied, failures, null,
        true);
    List<Change> routeChanges = observed.routes().stream()
        .map(r -> new Change(Change.Op.DELETE, Change.Kind.ROUTE, Differ.IN_CLUSTER, "route " + r)).toList();
    applier.routeBatch(observed.routes().stream().map(RouteChange::delete).toList(), routeChanges, applied, failures);
    steering.cleanup(failures, applied);
    deleteSideTable(DrainNftables.TABLE, drain::delete, applied, failures);
    deleteSideTable(GuardNftables.TABLE, guard::delete, applied, failures);
    deleteSideTable(NoHostNftables.TABLE, noHost::delete, applied, failures);
    return new ApplyReport(applied, failures, System.nanoTime() - start);
  }

  /** Deletes one of the side tables ({@code delete}: true when there was one), as a change or a failure. */
  private static void deleteSideTable(String table, BooleanSupplier delete, List<Change> applied,
      List<String> failures) {
    try {
      if (delete.getAsBoolean()) {
        applied.add(new Change(Change.Op.DELETE, Change.Kind.NFT_BASE, Differ.BASE, "nft table inet " + table));
      }
    } catch (NftException e) {
      failures.add("delete nft table inet " + table + ": " + e.getMessage());
    }
  }

  @Override
  public void close() {
    try {
      generation.close();
      marks.close();
      noHost.close();
      guard.close();
      drain.close();
      nft.close();
    } finally {
      kernel.close();
    }
  }
}

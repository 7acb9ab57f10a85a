package io.egressservice.dataplane;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Address;
import io.egressservice.netlink.BatchResult;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteChange;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.RtNetlink;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleChange;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.GenerationSource;
import io.egressservice.nft.MarkNftables;
import io.egressservice.nft.NftClient;
import io.egressservice.nft.NftException;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.PlanInputs;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.ObjectRef;
import io.egressservice.plan.PlanConfig;
import io.egressservice.plan.Planner;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.SteerRoute;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.ovn.k8s.v1.EgressService;
import java.util.OptionalLong;
import java.util.function.Function;

/**
 * The kernel side of one network namespace: observes what the agent owns, diffs it against the plan
 * and applies the difference. Every reconcile (an event, the periodic resync, a drift notification,
 * a one-shot {@code apply}) runs the same {@link #reconcile}.
 */
public final class Dataplane implements AutoCloseable {
  private static final System.Logger LOG = System.getLogger(Dataplane.class.getName());

  private final NetnsThread thread;
  private final RtNetlink netlink;
  private final EgressNftables nft;
  private final MarkNftables marks;
  private final GenerationSource generation;
  private final int priority;
  private final int protocol;
  /** Throw routes the kernel refused because someone else's route has that destination (warned once each). */
  private final java.util.Set<Route> conflicts = java.util.concurrent.ConcurrentHashMap.newKeySet();
  private final SteeringDataplane steering;
  private final NftClient noHostClient;
  private final io.egressservice.nft.NoHostNftables noHost;
  private final TunnelGuard guard;
  private final FlowDrain drain;
  private long lastNoHostVerifyNanos = System.nanoTime() - NO_HOST_VERIFY_NANOS;
  /** The no-host table is listed (to repair a deleted one) at most this often; otherwise written on change only. */
  private static final long NO_HOST_VERIFY_NANOS = 30_000_000_000L;

  private Dataplane(NetnsThread thread, RtNetlink netlink, EgressNftables nft, MarkNftables marks,
      GenerationSource generation, int priority, int protocol) {
    this.steering = new SteeringDataplane(netlink, thread, protocol);
    this.noHostClient = NftClient.open(thread);
    this.noHost = new io.egressservice.nft.NoHostNftables(noHostClient);
    this.guard = new TunnelGuard(thread, () -> {
      nft.otherTableCommitted();
      marks.otherTableCommitted();
    });
    this.drain = new FlowDrain(thread, netlink, priority, protocol, () -> {
      nft.otherTableCommitted();
      marks.otherTableCommitted();
    });
    this.thread = thread;
    this.netlink = netlink;
    this.nft = nft;
    this.marks = marks;
    this.generation = generation;
    this.priority = priority;
    this.protocol = protocol;
  }

  /**
   * Opens the dataplane of {@code netns} (empty: the current namespace) for rules at {@code priority}
   * and {@code priority - 1} carrying {@code protocol}.
   *
   * @throws DataplaneException when the namespace does not exist or the process lacks privileges
   */
  public static Dataplane open(Optional<String> netns, int priority, int protocol) {
    return open(netns, priority, protocol, GenerationSource::kernel);
  }

  /**
   * As {@link #open(Optional, int, int)}, reading the nftables generation (which lets an unchanged
   * table go unlisted) from the source {@code generation} makes on the namespace's thread; for tests
   * and benchmarks ({@code t -> GenerationSource.unavailable("off")} lists on every observe).
   */
  public static Dataplane open(Optional<String> netns, int priority, int protocol,
      Function<NetnsThread, GenerationSource> generation) {
    NetnsThread thread;
    try {
      thread = NetnsThread.enter(netns);
    } catch (NetlinkException e) {
      throw new DataplaneException(e.getMessage(), e);
    }
    try {
      RtNetlink netlink = RtNetlink.open(thread);
      EgressNftables nft = EgressNftables.open(thread, generation.apply(thread));
      MarkNftables marks = MarkNftables.open(thread, generation.apply(thread));
      return new Dataplane(thread, netlink, nft, marks, generation.apply(thread), priority, protocol);
    } catch (NetlinkException | NftException e) {
      thread.close();
      throw new DataplaneException(e.getMessage(), e);
    } catch (RuntimeException | UnsatisfiedLinkError e) {
      thread.close();
      throw new DataplaneException("cannot open the dataplane of " + thread.describe() + ": " + e.getMessage(), e);
    }
  }

  public String describe() {
    return thread.describe();
  }

  public NetnsThread thread() {
    return thread;
  }

  public RtNetlink netlink() {
    return netlink;
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
   * The owned state: our rules (P and P-1, our protocol, both families), our throw routes (our
   * protocol, any table: the tables themselves may be someone else's), our nft table, and the steering
   * device with its routes.
   */
  public ObservedState observe() {
    try {
      List<Rule> rules = new ArrayList<>();
      List<Route> routes = new ArrayList<>();
      for (IpFamily f : IpFamily.values()) {
        for (Rule r : netlink.listRules(f)) {
          if (isOwned(r)) {
            rules.add(r);
          }
        }
        for (Route r : netlink.listRoutes(f, RouteType.THROW, protocol)) {
          if (isOwned(r)) {
            routes.add(r);
          }
        }
      }
      List<Link> links = netlink.listLinks();
      ObservedState observed = new ObservedState(rules, routes, nft.observe(), marks.observe(), ReversePath.State.NONE,
          steering.observe(links));
      knownMarks = existingMarks(observed.rules());
      knownSteerTables = observed.steering().tables();
      knownLinks = links;
      return observed;
    } catch (NetlinkException | NftException e) {
      throw new DataplaneException("cannot read the owned state of " + describe() + ": " + e.getMessage(), e);
    }
  }

  private boolean isOwned(Rule r) {
    return r.protocol() == protocol && (r.priority() == priority || r.priority() == priority - 1);
  }

  /** Ours: a throw route with our protocol. Every other route, in any table, is someone else's. */
  private boolean isOwned(Route r) {
    return r.protocol() == protocol && r.type() == RouteType.THROW;
  }

  /** Names in {@code spec.network} to tables: VRF devices of this namespace, then rt_tables. */
  public NetworkResolution resolveNetworks(Collection<String> networks, RtTables rtTables) {
    try {
      return NetworkResolver.resolve(networks, netlink.listLinks(), rtTables);
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot list links of " + describe() + ": " + e.getMessage(), e);
    }
  }

  /**
   * Every address on every interface of this namespace ({@code ip addr show}), both families, as host
   * prefixes: the node's own addresses, whether or not its Node object lists them.
   */
  public List<IpPrefix> localAddresses() {
    try {
      // Not the steering device's own link-local address: the agent put it there, and counting it would make
      // the plan differ before and after the device exists (no traffic ever goes to it).
      return netlink.listAddresses().stream().map(Address::local)
          .filter(a -> !a.equals(SteeringDataplane.DEVICE_ADDRESS)).distinct().toList();
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot list addresses of " + describe() + ": " + e.getMessage(), e);
    }
  }

  /**
   * What the plan needs to know of this node: how the given {@code spec.network} values resolve
   * here, the node's addresses, and (from {@code observed}, no second dump) the marks in use.
   */
  public NodeFacts facts(Collection<String> networks, ObservedState observed) {
    return facts(networks, observed, links());
  }

  private NodeFacts facts(Collection<String> networks, ObservedState observed, List<Link> links) {
    knownLinks = links;
    knownAddresses = localAddresses();
    return new NodeFacts(NetworkResolver.resolve(networks, links, rtTables.current()),
        knownAddresses, existingMarks(observed.rules()), observed.steering().tables());
  }

  /**
   * The node facts without a dump when nothing changed (see the contract in the issue-20 notes): links and
   * addresses as last read, re-read after {@link #invalidateFacts()}; rt_tables re-read when its files changed;
   * marks and steering tables from the last observation, as updated by the reconciles that succeeded since.
   * Before any observation, one (a dump) is made.
   */
  public NodeFacts currentFacts(Collection<String> networks) {
    if (knownMarks == null || knownSteerTables == null) {
      observe();
    }
    if (knownLinks == null) {
      knownLinks = links();
    }
    if (knownAddresses == null) {
      knownAddresses = localAddresses();
    }
    return new NodeFacts(NetworkResolver.resolve(networks, knownLinks, rtTables.current()), knownAddresses,
        knownMarks, knownSteerTables);
  }

  /** The links or addresses may have changed (a notification, an overflow, a resync): the next facts read them. */
  public void invalidateFacts() {
    knownLinks = null;
    knownAddresses = null;
  }

  /** Links as last listed; null: list them. */
  private volatile List<Link> knownLinks;
  private volatile List<IpPrefix> knownAddresses;
  /** Marks and steering tables the kernel holds, by the last observation or the last successful apply. */
  private volatile Map<Long, Long> knownMarks;
  private volatile Map<Long, Set<IpPrefix>> knownSteerTables;
  private final RtTablesCache rtTables = new RtTablesCache(RtTables.DEFAULT_FILES);
  /** The reverse-path facts of the last full reconcile in mark mode and the networks they were read for. */
  private ReversePath.State knownReversePath = ReversePath.State.NONE;
  private Set<Long> knownReversePathTables = Set.of();
  /** The no-host table's inputs as last synced; null before the first reconcile (the fast path then falls back). */
  private NoHostInputs noHostInputs;
  /** The last full reconcile succeeded (or the fast path since): the kernel holds what it applied. */
  private boolean viewCurrent;

  /** After a reconcile that succeeded, the kernel holds {@code desired}: the facts follow it, not the old dump. */
  private void learnApplied(DesiredState desired) {
    Map<Long, Long> marksNow = new HashMap<>();
    for (Rule r : Differ.wantedRules(desired).keySet()) {
      if (r.priority() == priority && r.fwmark().isPresent() && r.source().isEmpty()) {
        marksNow.putIfAbsent(Integer.toUnsignedLong(r.table()), r.fwmark().getAsLong());
      }
    }
    Map<Long, Set<IpPrefix>> steerNow = new HashMap<>();
    desired.steering().routes().forEach(r -> steerNow.computeIfAbsent(r.table(), k -> new java.util.HashSet<>())
        .add(r.hostAddress()));
    knownMarks = marksNow;
    knownSteerTables = steerNow;
  }

  private List<Link> links() {
    try {
      return netlink.listLinks();
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot list links of " + describe() + ": " + e.getMessage(), e);
    }
  }

  /** Mark mode: the table each owned {@code fwmark} rule at P routes to, keyed by table, so marks stay stable. */
  private Map<Long, Long> existingMarks(List<Rule> owned) {
    Map<Long, Long> out = new HashMap<>();
    for (Rule r : owned) {
      if (r.priority() == priority && r.fwmark().isPresent() && r.source().isEmpty()) {
        out.putIfAbsent(Integer.toUnsignedLong(r.table()), r.fwmark().getAsLong());
      }
    }
    return out;
  }

  /**
   * The node's plan for {@code objects}: one observation of the owned state feeds both the plan's
   * node facts and the diff that {@link #reconcile(NodePlan)} applies.
   */
  public NodePlan plan(ClusterObjects objects, String node, PlanConfig config) {
    return plan(objects, node, config, PlanInputs.Memo.none());
  }

  /** The same, converting only the objects {@code memo} has not seen (an informer-backed caller's memo). */
  public NodePlan plan(ClusterObjects objects, String node, PlanConfig config, PlanInputs.Memo memo) {
    long start = System.nanoTime();
    ObservedState observed = observe();
    long observeNanos = System.nanoTime() - start;
    TreeSet<String> networks = new TreeSet<>();
    for (EgressService es : objects.egressServices()) {
      if (es.getSpec() != null && es.getSpec().getNetwork() != null) {
        networks.add(es.getSpec().getNetwork().trim());
      }
    }
    List<Link> links = links();
    NodeFacts facts = facts(networks, observed, links);
    DesiredState desired = Planner.plan(PlanInputs.of(node, objects, facts.localAddresses(), facts.networks(),
        config, facts.existingMarks(), facts.existingSteerTables(), memo));
    observed = withReversePath(desired, observed, links);
    return new NodePlan(desired, Differ.wantedRules(desired), observed, observeNanos, steeringMtu(desired, links));
  }

  /** The MTU the steering device should have for the plan's hosts (only looked up while steering is wanted). */
  public int steeringMtu(DesiredState desired) {
    return desired.steering().deviceWanted() ? steeringMtu(desired, links()) : 0;
  }

  private int steeringMtu(DesiredState desired, List<Link> links) {
    if (!desired.steering().deviceWanted()) {
      return 0;
    }
    try {
      return steering.deviceMtu(desired.steering().routes(), links);
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot read the main table of " + describe() + ": " + e.getMessage(), e);
    }
  }

  /** Mark mode: the reverse-path facts of the plan's networks' uplinks ({@link ReversePath}). */
  private ObservedState withReversePath(DesiredState desired, ObservedState observed, List<Link> links) {
    if (desired.ruleMode() != io.egressservice.plan.RuleMode.MARK || desired.networkMarks().isEmpty()) {
      return observed;
    }
    try {
      ReversePath.State state = ReversePath.observe(netlink, thread, links, desired.networkMarks().keySet());
      knownReversePath = state;
      knownReversePathTables = Set.copyOf(desired.networkMarks().keySet());
      return observed.withReversePath(state);
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot read the uplinks of the marked networks in " + describe() + ": "
          + e.getMessage(), e);
    }
  }

  /** Diff the plan against the observation it was made with, and apply. */
  public ApplyReport reconcile(NodePlan plan) {
    // The guard first: the steering port is guarded before the device that listens on it is created.
    List<String> guarded = guard.sync(plan.desired());
    // not on the first reconcile: running flows stay
    EarlyRestart early = lastTreatment == null ? EarlyRestart.NONE
        : switchedSources(lastTreatment, ServiceSlices.treatments(plan.desired()), lastSteerRoutes, plan.desired());
    ApplyReport report = withGuard(guarded, withHolds(apply(diff(plan), null, false, early), plan.desired()));
    afterFullReconcile(plan.desired(), report);
    return new ApplyReport(report.applied(), report.failures(), report.kernelNanos() + plan.observeNanos());
  }

  /** The report with the guard table's failures (written before it) first. */
  private static ApplyReport withGuard(List<String> guardFailures, ApplyReport report) {
    if (guardFailures.isEmpty()) {
      return report;
    }
    List<String> failures = new ArrayList<>(guardFailures);
    failures.addAll(report.failures());
    return new ApplyReport(report.applied(), failures, report.kernelNanos());
  }

  /** Packets the guard table dropped since this agent started: {@code port}, {@code tunnel}, {@code spoofed}. */
  public Map<String, Long> guardDroppedPackets() {
    return guard.droppedPackets();
  }

  private void afterFullReconcile(DesiredState desired, ApplyReport report) {
    viewCurrent = report.succeeded();
    if (report.succeeded()) {
      learnApplied(desired);
    }
  }

  /** Writes the no-host table when the held endpoints changed (see {@link io.egressservice.nft.NoHostNftables}). */
  private ApplyReport withHolds(ApplyReport report, DesiredState desired) {
    long t = System.nanoTime();
    boolean verify = t - lastNoHostVerifyNanos >= NO_HOST_VERIFY_NANOS;
    List<String> failures = new ArrayList<>(report.failures());
    try {
      noHostInputs = null;
      NoHostInputs inputs = NoHostInputs.of(desired);
      syncNoHost(inputs, verify);
      noHostInputs = inputs;
      // Its rewrite (during endpoint churn, with every SNAT change) moves the nftables generation: without this
      // the SNAT and mark caches would list our table again on the next reconcile.
      nft.otherTableCommitted();
      marks.otherTableCommitted();
      if (verify) {
        lastNoHostVerifyNanos = t;
      }
    } catch (NftException | IllegalStateException e) {
      failures.add("nft table inet " + io.egressservice.nft.NoHostNftables.TABLE + " (--no-host=drop): "
          + e.getMessage());
    }
    if (report.succeeded()) {
      restartChangedFlows(desired, failures);
    }
    return new ApplyReport(report.applied(), failures, report.kernelNanos() + System.nanoTime() - t);
  }

  private void syncNoHost(NoHostInputs inputs, boolean verify) {
    noHost.sync(inputs.holds(), inputs.inCluster(), inputs.lbIps(), inputs.ours(), inputs.guard(), verify);
  }

  /** How each local endpoint's traffic leaves, as last applied; null before the first reconcile. */
  private Map<IpPrefix, String> lastTreatment;
  /** The steering tables' routes as last applied with {@link #lastTreatment}: where a switched source was steered. */
  private List<SteerRoute> lastSteerRoutes = List.of();
  /** Restarts the flows of changed endpoints (and keeps what it learned of the kernel across reconciles). */
  private final io.egressservice.netlink.Conntrack conntrack = new io.egressservice.netlink.Conntrack();

  /**
   * Deletes the conntrack entries of the endpoints whose treatment changed since the last reconcile (not on the
   * first one: a restarted agent leaves running flows alone), so their flows start over with the new one. Only
   * their flows out of the cluster: their flows to pods, services and nodes never changed treatment.
   */
  private void restartChangedFlows(DesiredState desired, List<String> failures) {
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
    failures.addAll(conntrack.restartFlowsLeavingTheCluster(thread, changed, desired.inCluster()));
    deleteTakeovers(failures);
  }

  /**
   * Deletes the drained sources' entries without SNAT (their flows before the switch, steered meanwhile) until a round
   * finds none, then ends the drain: first the entries, then the rule, so no packet of theirs falls between. The
   * rounds catch an entry the earlier find missed: one made between that find and the rule deletion, or not yet
   * confirmed when a dump walked past it.
   */
  private void drainFlows(FlowDrain.Active active, List<IpPrefix> inCluster, boolean hold) {
    Set<IpPrefix> sources = active.plan().sources();
    if (hold) {
      guard.holdNewInbound(sources); // not held with the early restart (a failure before it): see holdNewInbound
    }
    try {
      for (int round = 0; round < DRAIN_ROUNDS; round++) {
        if (round > 0) {
          Thread.sleep(DRAIN_ROUND_MILLIS);
        }
        io.egressservice.netlink.Conntrack.Found f = conntrack.find(thread, sources, inCluster).withoutSnat();
        if (f.size() > 0) {
          earlyFailures.addAll(conntrack.delete(thread, f));
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

  /** At most this many rounds of {@link #drainFlows}, this far apart: a packet crosses a node in microseconds. */
  private static final int DRAIN_ROUNDS = 5;
  private static final long DRAIN_ROUND_MILLIS = 5;

  /** What the early restart in {@code apply} could not do; reported with the later pass's. */
  private final List<String> earlyFailures = new ArrayList<>();
  /** What the early restarts deleted since the last later pass, whose takeovers that pass deletes again. */
  private final List<io.egressservice.netlink.Conntrack.Found> earlyFound = new ArrayList<>();

  /** The later pass's end: see {@link io.egressservice.netlink.Conntrack#deleteTakeovers}. */
  private void deleteTakeovers(List<String> failures) {
    earlyFound.forEach(f -> failures.addAll(conntrack.deleteTakeovers(thread, f)));
    earlyFound.clear();
  }

  /**
   * The sources now SNATed or steered whose treatment changed: their flows restart right after the rule deletions
   * (the early restart in {@code apply}). A flow keeps the NAT its first packet chose, so until its entry goes, a flow that was
   * steered leaves the new host's uplink with the identity NAT and the no-host guard drops it: restarted after the
   * whole reconcile (route deletions, the no-host table), a planned move lost 14-69 datagrams of a 2 ms stream
   * there. The later pass deletes them again: a packet routed by the old rule just before its deletion has an entry
   * not yet confirmed, which a delete misses and which would keep the old NAT (the flow dropped for good). Held and
   * released sources restart only then, once the no-host table holds them (earlier they would leak).
   */
  /** Sources whose flows out of the cluster restart right after the rule deletions, and what is in the cluster. */
  /**
   * Sources whose flows out of the cluster restart right after the rule deletions, what is in the cluster, and those
   * of them whose established flows stay on their old host meanwhile ({@link FlowDrain}).
   */
  private record EarlyRestart(Set<IpPrefix> sources, List<IpPrefix> inCluster, FlowDrain.Plan drain) {
    static final EarlyRestart NONE = new EarlyRestart(Set.of(), List.of(), FlowDrain.Plan.NONE);
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
    Set<Long> used = new java.util.HashSet<>(next.networkMarks().values());
    Map<Long, Long> known = knownMarks;
    if (known != null) {
      used.addAll(known.values());
    }
    return FlowDrain.freeMark(next.markMask(), used).map(v -> new FlowDrain.Plan(entries, next.markMask(), v))
        .orElse(FlowDrain.Plan.NONE);
  }

  /** Packets of endpoints of services without a host dropped, per service ({@code namespace/name}). */
  public Map<String, Long> noHostDroppedPackets() {
    try {
      return noHost.droppedPackets();
    } catch (NftException | IllegalStateException e) {
      return Map.of();
    }
  }

  /** What {@link #reconcile(NodePlan)} would change (for {@code --dry-run}). */
  public static ChangeSet diff(NodePlan plan) {
    return Differ.diff(plan.desired(), plan.wantedRules(), plan.observed(), plan.steeringMtu());
  }

  /** Observe, diff, apply. */
  public ApplyReport reconcile(DesiredState desired) {
    long start = System.nanoTime();
    ObservedState observed = observe();
    if (desired.ruleMode() == io.egressservice.plan.RuleMode.MARK) {
      observed = withReversePath(desired, observed, links());
    }
    long observeNanos = System.nanoTime() - start;
    List<String> guarded = guard.sync(desired);
    EarlyRestart early = lastTreatment == null ? EarlyRestart.NONE
        : switchedSources(lastTreatment, ServiceSlices.treatments(desired), lastSteerRoutes, desired);
    ApplyReport report = withGuard(guarded, withHolds(apply(Differ.diff(desired, Differ.wantedRules(desired),
        observed, steeringMtu(desired)), null, false, early), desired));
    afterFullReconcile(desired, report);
    return new ApplyReport(report.applied(), report.failures(), report.kernelNanos() + observeNanos);
  }

  /**
   * The fast path (issue 20). Precondition, which the caller guarantees: the kernel holds {@code previous} in
   * full. Applies only what differs between {@code previous} and {@code next} for the services in {@code
   * changed}: their rules (adds without the kernel's duplicate scan, see {@link #apply(ChangeSet, KnownElements,
   * boolean)}), SNAT and mark elements (one transaction each, planned from {@code previous}, no listing; the
   * listing caches keep up), held and steered endpoints (the no-host table by element), and the conntrack restart
   * of those endpoints only. No rule, route, link or address dump, no nft listing. Falls back to {@link
   * #reconcile(DesiredState)} (one observation, the full diff) when anything node-wide differs, when the view is
   * not known to be current (no successful reconcile yet, or the last one failed), or when a change needs what
   * only a listing tells (the SNAT table's first creation, a base repair). Never throws for kernel refusals.
   */
  public ApplyReport reconcileChanged(DesiredState previous, DesiredState next, Set<ObjectRef> changed) {
    long start = System.nanoTime();
    Optional<String> refusal = fastPathRefusal(previous, next);
    if (refusal.isPresent()) {
      fallbacks++;
      LOG.log(System.Logger.Level.DEBUG, "{0}: full reconcile instead of the fast path: {1}", describe(), refusal.get());
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
    ObservedState expected = ServiceSlices.expectedObservation(was, knownReversePath,
        ServiceSlices.needsSnatTable(previous));
    ChangeSet changes = Differ.diff(now, Differ.wantedRules(now), expected);
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
    EarlyRestart early = switchedSources(ServiceSlices.treatments(was), ServiceSlices.treatments(now),
        previous.steering().routes(), next);
    ApplyReport report = apply(changes, new KnownElements(expected.nft().snat(), marksRemoved, marksAdded), false,
        early);
    fastPaths++;
    long t = System.nanoTime() - guardNanos;
    List<String> failures = new ArrayList<>(guarded);
    failures.addAll(report.failures());
    syncNoHostChanged(was, now, next, failures);
    if (failures.isEmpty()) {
      restartChangedFlows(was, now, failures);
      lastSteerRoutes = next.steering().routes();
    }
    viewCurrent = failures.isEmpty();
    return new ApplyReport(report.applied(), failures, report.kernelNanos() + System.nanoTime() - t);
  }

  private long fastPaths;
  private long fallbacks;

  /** How often {@link #reconcileChanged} took the fast path, and how often it fell back to a full reconcile. */
  public record FastPathStats(long fastPaths, long fallbacks) {}

  public FastPathStats fastPathStats() {
    return new FastPathStats(fastPaths, fallbacks);
  }

  /** What the fast path plans nft transactions from instead of a listing. */
  private record KnownElements(java.util.Collection<SnatElement> snat, List<IpPrefix> marksRemoved,
      List<MarkElement> marksAdded) {}

  /** Why the fast path cannot apply {@code previous} to {@code next}, or empty. */
  private Optional<String> fastPathRefusal(DesiredState previous, DesiredState next) {
    if (!viewCurrent || lastTreatment == null || noHostInputs == null || !guard.current()) {
      return Optional.of("the kernel view is not current (no successful reconcile since the last failure)");
    }
    Optional<String> nodeWide = ServiceSlices.nodeWideDifference(previous, next);
    if (nodeWide.isPresent()) {
      return Optional.of(nodeWide.get() + " changed");
    }
    if (next.ruleMode() == io.egressservice.plan.RuleMode.MARK && !next.networkMarks().isEmpty()
        && !knownReversePathTables.equals(next.networkMarks().keySet())) {
      return Optional.of("the reverse-path facts were read for other networks");
    }
    return Optional.empty();
  }

  /** The no-host table after the fast path: element updates, or the whole table when holds or the guard moved. */
  private void syncNoHostChanged(DesiredState was, DesiredState now, DesiredState next, List<String> failures) {
    NoHostInputs inputs = noHostInputs;
    noHostInputs = null;
    try {
      NoHostInputs.Delta d = inputs.update(was, now);
      if (d.reshaped() || !noHost.updateElements(d.lbAdded(), d.lbRemoved(), d.oursAdded(), d.oursRemoved())) {
        syncNoHost(inputs, false);
      }
      nft.otherTableCommitted();
      marks.otherTableCommitted();
      noHostInputs = inputs;
    } catch (NftException | IllegalStateException e) {
      failures.add("nft table inet " + io.egressservice.nft.NoHostNftables.TABLE + " (--no-host=drop): "
          + e.getMessage());
    }
  }

  /** {@link #restartChangedFlows(DesiredState, List)} for the sources of the changed services only. */
  private void restartChangedFlows(DesiredState was, DesiredState now, List<String> failures) {
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
    failures.addAll(conntrack.restartFlowsLeavingTheCluster(thread, changedSources, now.inCluster()));
    deleteTakeovers(failures);
  }

  /**
   * Applies a change set in its order: route additions, rule additions, the nft transaction, rule
   * deletions, route deletions. A refused
   * request does not stop the others; it is reported, and the kernel holds either the old or the new
   * form of every object, which the next reconcile completes.
   */
  public ApplyReport apply(ChangeSet changes) {
    return apply(changes, null, true, EarlyRestart.NONE);
  }

  /**
   * @param known the fast path's knowledge of the nft elements involved (the transactions are planned from it,
   *     without a listing); null: planned from the (cached) listing
   * @param exclusive rule adds with NLM_F_EXCL; false only for adds planned against a fresh dump or the kernel
   *     view, which cannot be present (the kernel's duplicate scan makes an add cost twice the rule list)
   * @param early sources whose flows restart right after the rule deletions, when all went well so far
   *     ({@link #switchedSources})
   */
  private ApplyReport apply(ChangeSet changes, KnownElements known, boolean exclusive, EarlyRestart early) {
    List<Change> applied = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    long kernel = 0;
    Map<Rule, Change> ruleChanges = new HashMap<>();
    List<Change> ruleAddChanges = new ArrayList<>();
    List<Change> nftChanges = new ArrayList<>();
    List<Change> ruleDeleteChanges = new ArrayList<>();
    List<Change> routeAddChanges = new ArrayList<>();
    List<Change> routeDeleteChanges = new ArrayList<>();
    for (Change c : changes.changes()) {
      if (c.kind() == Change.Kind.RULE) {
        (c.op() == Change.Op.ADD ? ruleAddChanges : ruleDeleteChanges).add(c);
      } else if (c.kind() == Change.Kind.ROUTE) {
        (c.op() == Change.Op.ADD ? routeAddChanges : routeDeleteChanges).add(c);
      } else {
        nftChanges.add(c);
      }
    }
    for (int i = 0; i < changes.ruleAdds().size(); i++) {
      ruleChanges.put(changes.ruleAdds().get(i), ruleAddChanges.get(i));
    }
    for (int i = 0; i < changes.ruleDeletes().size(); i++) {
      ruleChanges.put(changes.ruleDeletes().get(i), ruleDeleteChanges.get(i));
    }

    long t = System.nanoTime();
    if (!changes.steering().isEmpty()) {
      steering.applyBefore(changes.steering(), failures, applied);
    }
    routeBatch(changes.routeAdds().stream().map(RouteChange::add).toList(), routeAddChanges, applied, failures);
    // The kernel calls an added rule a duplicate of one that differs only in a family selector the new
    // one leaves unset (tos, realms: fib4_rule_compare checks them only when the request has them). When
    // such a stale rule is among the deletes, the exact rule goes in right after it is gone.
    List<RuleChange> shadowed = new ArrayList<>();
    batch(changes.ruleAdds().stream().map(RuleChange::add).toList(), ruleChanges, applied, failures,
        changes.ruleDeletes().isEmpty() ? null : shadowed, exclusive);
    kernel += System.nanoTime() - t;

    // Before the nft transactions: in mark mode the mark elements, not the rules, switch the sources' route.
    Optional<FlowDrain.Active> draining = failures.isEmpty() ? drain.begin(early.drain()) : Optional.empty();
    if (!changes.nft().isEmpty() || changes.ensureNftBase()) {
      t = System.nanoTime();
      try {
        // ensureBase: element changes need the maps and sets; an intact base is left untouched.
        List<EgressNftables.Refusal> refused = List.of();
        if (known != null) {
          nft.applyKnown(changes.nft(), known.snat());
        } else {
          refused = nft.applyInBatches(changes.nft(), true);
        }
        if (!changes.ensureNftBase()) {
          marks.snatCommitted();
        }
        Set<String> refusedLines = new java.util.HashSet<>();
        for (EgressNftables.Refusal r : refused) {
          refusedLines.add("snat " + r.element().source() + " -> " + r.element().target());
          failures.add("nft element snat " + r.element().source() + " -> " + r.element().target() + " ("
              + r.element().comment() + "): " + r.reason());
        }
        // steering changes are reported by the steering dataplane as it makes them (with the device's real index)
        applied.addAll(nftChanges.stream()
            .filter(c -> c.kind() != Change.Kind.MARK && c.kind() != Change.Kind.SYSCTL && c.kind() != Change.Kind.STEER)
            .filter(c -> refusedLines.isEmpty() || c.kind() != Change.Kind.SNAT
                || refusedLines.stream().noneMatch(l -> c.description().equals(l) || c.description().startsWith(l + " ")))
            .toList());
      } catch (NftException e) {
        failures.add("nft transaction (" + nftChanges.size() + " change(s), none applied): " + e.getMessage());
        if (e instanceof NftException.PermissionDenied) {
          throw new DataplaneException(e.getMessage(), e);
        }
      }
      kernel += System.nanoTime() - t;
    }

    if (!changes.srcValidMark().isEmpty()) {
      t = System.nanoTime();
      List<Change> sysctlChanges = nftChanges.stream().filter(c -> c.kind() == Change.Kind.SYSCTL).toList();
      int i = 0;
      for (Map.Entry<String, Integer> dev : new java.util.TreeMap<>(changes.srcValidMark()).entrySet()) {
        Optional<String> failure = ReversePath.enableSrcValidMark(netlink, dev.getKey(), dev.getValue());
        if (failure.isPresent()) {
          failures.add(failure.get());
        } else if (i < sysctlChanges.size()) {
          applied.add(sysctlChanges.get(i));
        }
        i++;
      }
      kernel += System.nanoTime() - t;
    }

    if (!changes.markCommands().isEmpty()) {
      t = System.nanoTime();
      List<Change> markChanges = nftChanges.stream().filter(c -> c.kind() == Change.Kind.MARK).toList();
      try {
        List<MarkNftables.Refusal> refused = List.of();
        if (known != null) {
          marks.runKnown(changes.markCommands(), known.marksRemoved(), known.marksAdded());
        } else {
          refused = marks.runInBatches(changes.markCommands());
        }
        nft.marksCommitted();
        Set<String> refusedSources = new java.util.HashSet<>();
        for (MarkNftables.Refusal r : refused) {
          refusedSources.add(r.source());
          failures.add("nft element mark " + r.source() + ": " + r.reason());
        }
        applied.addAll(refusedSources.isEmpty() ? markChanges : markChanges.stream()
            .filter(c -> !(c.op() == Change.Op.ADD && c.description().startsWith("mark ")
                && refusedSources.contains(c.description().substring(5).split(" ")[0])))
            .toList());
      } catch (NftException e) {
        failures.add("nft mark transaction (" + markChanges.size() + " change(s), none applied): " + e.getMessage());
        if (e instanceof NftException.PermissionDenied) {
          throw new DataplaneException(e.getMessage(), e);
        }
      }
      kernel += System.nanoTime() - t;
    }

    t = System.nanoTime();
    // The switched sources' entries are found before the rule deletions and deleted right after them: the dumps
    // walk the whole conntrack table (tens of milliseconds on a loaded node), and every millisecond between the
    // deletion and the restart is a dropped packet of a steady stream (its old NAT no longer fits its route).
    boolean restartEarly = !early.sources().isEmpty() && failures.isEmpty();
    if (restartEarly) {
      guard.holdNewInbound(early.sources());
    }
    io.egressservice.netlink.Conntrack.Found found = restartEarly
        ? conntrack.find(thread, early.sources(), early.inCluster()) : null;
    batch(changes.ruleDeletes().stream().map(RuleChange::delete).toList(), ruleChanges, applied, failures, null, true);
    batch(shadowed, ruleChanges, applied, failures, null, true);
    if (found != null) {
      earlyFailures.addAll(conntrack.delete(thread, found));
      earlyFound.add(found);
    }
    draining.ifPresent(d -> drainFlows(d, early.inCluster(), !restartEarly));
    routeBatch(changes.routeDeletes().stream().map(RouteChange::delete).toList(), routeDeleteChanges, applied,
        failures);
    if (!changes.steering().isEmpty()) {
      steering.applyAfter(changes.steering(), failures, applied);
    }
    kernel += System.nanoTime() - t;
    return new ApplyReport(applied, failures, kernel);
  }

  /** {@code described} holds the description of each request, in the same order. */
  private void routeBatch(List<RouteChange> requests, List<Change> described, List<Change> applied,
      List<String> failures) {
    if (requests.isEmpty()) {
      return;
    }
    Map<RouteChange, Change> byRequest = new HashMap<>();
    for (int i = 0; i < requests.size(); i++) {
      byRequest.put(requests.get(i), described.get(i));
    }
    BatchResult<RouteChange> result = netlink.applyRoutes(requests);
    for (RouteChange ok : result.succeeded()) {
      applied.add(byRequest.get(ok));
      conflicts.remove(ok.route());
    }
    for (BatchResult.Failure<RouteChange> f : result.failed()) {
      if (f.change().op() == RouteChange.Op.DELETE && f.error() instanceof NetlinkException.NotFound) {
        applied.add(byRequest.get(f.change())); // already gone: the goal is met
        continue;
      }
      if (f.error() instanceof NetlinkException.PermissionDenied) {
        throw new DataplaneException(f.error().getMessage(), f.error());
      }
      if (f.change().op() == RouteChange.Op.ADD && f.error() instanceof NetlinkException.AlreadyExists) {
        // Not ours (ours would have been observed): someone else's route to that destination, which the
        // admin meant for the table's users. Left alone and said once; not a failure, so readiness holds.
        if (conflicts.add(f.change().route())) {
          LOG.log(System.Logger.Level.WARNING, "{0}: table {1} already has a route to {2} that is not the agent''s;"
              + " left alone, so the service''s traffic to {2} follows it instead of being thrown back",
              describe(), Integer.toUnsignedString(f.change().route().table()),
              f.change().route().destination().map(Object::toString).orElse("default"));
        }
        continue;
      }
      failures.add(f.error().getMessage());
    }
  }

  /**
   * @param alreadyExists where adds refused as duplicates go, to be tried again after the deletes; null:
   *     such an add counts as done
   */
  private void batch(List<RuleChange> requests, Map<Rule, Change> described, List<Change> applied,
      List<String> failures, List<RuleChange> alreadyExists, boolean exclusive) {
    if (requests.isEmpty()) {
      return;
    }
    BatchResult<RuleChange> result = netlink.apply(requests, exclusive);
    for (RuleChange ok : result.succeeded()) {
      applied.add(described.get(ok.rule()));
    }
    for (BatchResult.Failure<RuleChange> f : result.failed()) {
      if (f.change().op() == RuleChange.Op.DELETE && f.error() instanceof NetlinkException.NotFound) {
        applied.add(described.get(f.change().rule())); // already gone: the goal is met
        continue;
      }
      if (f.change().op() == RuleChange.Op.ADD && f.error() instanceof NetlinkException.AlreadyExists) {
        if (alreadyExists != null) {
          alreadyExists.add(f.change());
        } else {
          applied.add(described.get(f.change().rule()));
        }
        continue;
      }
      if (f.error() instanceof NetlinkException.PermissionDenied) {
        throw new DataplaneException(f.error().getMessage(), f.error());
      }
      failures.add(f.error().getMessage());
    }
  }

  /** Removes everything the agent owns in this namespace, and nothing else. */
  public ApplyReport cleanup() {
    long start = System.nanoTime();
    ObservedState observed = observe();
    List<Change> applied = new ArrayList<>();
    List<String> failures = new ArrayList<>();
    Map<Rule, Change> described = new HashMap<>();
    for (Rule r : observed.rules()) {
      described.put(r, new Change(Change.Op.DELETE, Change.Kind.RULE, Differ.UNKNOWN, "rule " + r));
    }
    batch(observed.rules().stream().map(RuleChange::delete).toList(), described, applied, failures, null, true);
    List<Change> routeChanges = observed.routes().stream()
        .map(r -> new Change(Change.Op.DELETE, Change.Kind.ROUTE, Differ.IN_CLUSTER, "route " + r)).toList();
    routeBatch(observed.routes().stream().map(RouteChange::delete).toList(), routeChanges, applied, failures);
    if (observed.nft().tablePresent()) {
      try {
        nft.deleteTable();
        applied.add(new Change(Change.Op.DELETE, Change.Kind.NFT_BASE, Differ.BASE,
            "nft table inet " + EgressNftables.TABLE + " (" + observed.nft().snat().size() + " SNAT element(s))"));
      } catch (NftException e) {
        failures.add("delete nft table inet " + EgressNftables.TABLE + ": " + e.getMessage());
      }
    }
    steering.cleanup(failures, applied);
    deleteSideTable(io.egressservice.nft.DrainNftables.TABLE, drain::delete, applied, failures);
    deleteSideTable(io.egressservice.nft.GuardNftables.TABLE, guard::delete, applied, failures);
    deleteSideTable(io.egressservice.nft.NoHostNftables.TABLE, () -> {
      boolean present = noHostClient.listTableIfPresent("inet", io.egressservice.nft.NoHostNftables.TABLE).isPresent();
      if (present) {
        noHost.delete();
      }
      return present;
    }, applied, failures);
    return new ApplyReport(applied, failures, System.nanoTime() - start);
  }

  /** Deletes one of the side tables ({@code delete}: true when there was one), as a change or a failure. */
  private static void deleteSideTable(String table, java.util.function.BooleanSupplier delete, List<Change> applied,
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
      noHostClient.close();
      guard.close();
      drain.close();
      nft.close();
    } finally {
      try {
        netlink.close();
      } finally {
        thread.close();
      }
    }
  }
}

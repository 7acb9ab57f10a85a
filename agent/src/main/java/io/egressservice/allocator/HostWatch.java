package io.egressservice.allocator;

import io.egressservice.informers.ClusterInformers;
import io.egressservice.ip.IpPrefix;
import io.egressservice.logging.LogKeys;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.metrics.ProbeMetrics;
import io.egressservice.plan.EgressServiceInfo;
import io.fabric8.kubernetes.api.model.Node;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;
import org.ovn.k8s.v1.EgressService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The allocator's probes of the hosts' agents, on every replica (a follower's verdicts are ready when it takes
 * over): which nodes to probe (the hosts in {@code status.host}, the leader's chosen hosts, the unreachable ones and a
 * few candidates), the verdicts ({@link HostHealth}: a node found unreachable is drained, its services move), when
 * each was lost (for the failover time), and whether this replica suspects its own path to the nodes (most probed
 * nodes failing at once), which it says in a log line, a gauge and to the {@link Allocator.Listener}s.
 */
final class HostWatch {
  /** The allocator's logger: operators filter on it, whichever part of the allocator speaks. */
  private static final Logger LOG = LoggerFactory.getLogger(Allocator.class);

  private final AllocatorConfig config;
  private final String identity;
  private final AllocatorMetrics metrics;
  private final List<Allocator.Listener> listeners;
  private final ClusterInformers informers;
  private final AllocatorObjects objects;
  private final Runnable verdictChanged;
  private final BooleanSupplier closed;
  private final Supplier<Set<String>> chosenHosts;

  /** Which hosts are unreachable; written by probe threads, read by the worker. Guarded by itself. */
  private final HostHealth health;
  /** When each unreachable node was found unreachable (monotonic), for the failover time. Guarded by health. */
  private final Map<String, Long> lostAtNanos = new HashMap<>();
  private AgentProber prober;
  /** The probe targets need computing again (a Node, or a host in some status, changed). */
  private final AtomicBoolean targetsDirty = new AtomicBoolean(true);
  /** Whether this replica suspects its own path to the nodes now (hysteresis over {@link HostHealth}'s judgment). */
  private final AtomicBoolean selfSuspected = new AtomicBoolean();
  /** When the judgment last said "suspected" (monotonic); guarded by health. */
  private long lastSuspectedNanos;

  /**
   * @param verdictChanged a node became unreachable or answers again (the next pass reads the nodes again)
   * @param chosenHosts the hosts the leader chose (worker thread; none on a follower)
   */
  HostWatch(AllocatorConfig config, String identity, AllocatorMetrics metrics, List<Allocator.Listener> listeners,
      ClusterInformers informers, AllocatorObjects objects, Runnable verdictChanged, BooleanSupplier closed,
      Supplier<Set<String>> chosenHosts) {
    this.config = config;
    this.identity = identity;
    this.metrics = metrics;
    this.listeners = listeners;
    this.informers = informers;
    this.objects = objects;
    this.verdictChanged = verdictChanged;
    this.closed = closed;
    this.chosenHosts = chosenHosts;
    this.health = new HostHealth(config.probes().health());
  }

  /** Starts the probe threads (when probes are enabled); the caller runs {@link #refreshTargets} every interval. */
  void start() {
    ProbeMetrics probeMetrics = metrics.probes();
    prober = new AgentProber(config.probes().interval(), config.probes().timeout(), config.probes().threads(),
        config.probes().netns(), config.probes().keys(), config.probes().proofs(), this::probed,
        (node, address, reason) -> probeMetrics.unproven(address.getAddress().getHostAddress(), reason));
  }

  /** Whether the probes run. */
  boolean probing() {
    return prober != null;
  }

  /** The probe targets need computing again (a Node or an EgressService changed). */
  void targetsChanged() {
    targetsDirty.set(true);
  }

  /** When {@code node} was found unreachable (its last answer, monotonic), if it is. */
  OptionalLong lostAtNanos(String node) {
    synchronized (health) {
      Long lost = lostAtNanos.get(node);
      return lost == null ? OptionalLong.empty() : OptionalLong.of(lost);
    }
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
      if (result == ProbeResult.NO_ANSWER || result == ProbeResult.UNPROVEN || selfSuspected.get()) {
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
        LOG.atWarn().addKeyValue(LogKeys.NODE, node).log("{}: node {} is unreachable ({}): drained, its services move",
            identity, node,
            result == ProbeResult.NO_ANSWER ? "its agent's health port does not answer"
                : result == ProbeResult.UNPROVEN ? "no proven answer of its agent for "
                + config.probes().health().agentDownGrace().toSeconds() + " s"
                : "its agent has not been healthy for " + config.probes().health().agentDownGrace().toSeconds() + " s");
      } else {
        LOG.atInfo().addKeyValue(LogKeys.NODE, node)
            .log("{}: node {} answers its health probes again: it may host services", identity, node);
      }
      verdictChanged.run();
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
        for (Allocator.Listener l : listeners) {
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
      for (Allocator.Listener l : listeners) {
        l.selfSuspected(false, s);
      }
    }
  }

  /** The nodes this replica probes now (hosts, candidates, unreachable nodes). */
  Set<String> probedNodes() {
    synchronized (health) {
      return health.tracked();
    }
  }

  /** Whether this replica suspects its own path to the nodes now (and so drains nothing new). */
  boolean selfSuspected() {
    return selfSuspected.get();
  }

  /** Nodes the health probes hold unreachable now. */
  Set<String> unreachableNodes() {
    synchronized (health) {
      return health.unreachable();
    }
  }

  /**
   * Every replica, leader or not, every probe interval: when a Node or an EgressService changed, the probe targets
   * from the caches (the hosts in {@code status.host}; the leader adds the hosts it just chose).
   */
  void refreshTargets() {
    if (prober == null || closed.getAsBoolean() || !targetsDirty.get() || !informers.hasSynced()) {
      return;
    }
    targetsDirty.set(false);
    try {
      Set<String> hosts = new TreeSet<>();
      for (EgressService es : informers.egressServices().getStore().list()) {
        String h = es.getStatus() == null ? null : es.getStatus().getHost();
        if (h != null && !h.isEmpty() && !h.equals(EgressServiceInfo.HOST_ALL)) {
          hosts.add(h);
        }
      }
      hosts.addAll(chosenHosts.get());
      Set<String> unreachable = unreachableNodes();
      probeHosts(hosts, objects.nodes(unreachable), objects.nodeObjects(), unreachable);
    } catch (RuntimeException e) {
      targetsDirty.set(true);
      LOG.warn("{}: could not update the host probes' targets: {}", identity, e.toString());
    }
  }

  /** After a pass that changed the hosts or the nodes (the leader's worker): the targets from what it decided. */
  void probeAfterPass(Set<String> hosts, List<NodeState> nodeStates, List<Node> nodeObjects,
      Set<String> unreachable) {
    targetsDirty.set(false);
    probeHosts(hosts, nodeStates, nodeObjects, unreachable);
  }

  /**
   * Probes the nodes that host a LoadBalancerIP service, the unreachable ones (to see them return), and up to
   * {@link HostProbes#candidates()} other nodes that could host (Ready, schedulable, not being deleted; by name):
   * O(hosts) TCP connections, no API request.
   */
  private void probeHosts(Set<String> hosts, List<NodeState> nodeStates, List<Node> nodeObjects,
      Set<String> unreachable) {
    Set<String> wanted = ProbeTargets.select(hosts, unreachable, nodeStates, config.probes().candidates());
    Map<String, InetSocketAddress> targets = new HashMap<>();
    for (Node n : nodeObjects) {
      String name = n.getMetadata().getName();
      if (wanted.contains(name)) {
        internalIp(n).ifPresent(ip -> targets.put(name, new InetSocketAddress(ip, config.probes().port())));
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
  static Optional<InetAddress> internalIp(Node n) {
    if (n.getStatus() == null || n.getStatus().getAddresses() == null) {
      return Optional.empty();
    }
    return n.getStatus().getAddresses().stream()
        .filter(a -> "InternalIP".equals(a.getType()) && a.getAddress() != null)
        .map(a -> IpPrefix.tryParse(a.getAddress()))
        .flatMap(Optional::stream)
        .filter(IpPrefix::isHost)
        .findFirst()
        .map(p -> {
          try {
            return InetAddress.getByAddress(p.addressBytes());
          } catch (UnknownHostException e) {
            throw new IllegalStateException(e);
          }
        });
  }

  void close() {
    if (prober != null) {
      prober.close();
    }
  }
}

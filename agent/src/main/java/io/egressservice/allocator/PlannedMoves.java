package io.egressservice.allocator;

import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.health.Hosting;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.EgressServiceInfo;
import io.egressservice.model.ObjectRef;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Function;
import org.ovn.k8s.v1.EgressService;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Make before break for planned host moves (the old host still Ready, reachable and not being deleted: a cordon, a
 * relabel, a changed nodeSelector). Without it the steering nodes switch to the new host the moment {@code
 * status.host} changes, tens of milliseconds before the new host's agent has its SNAT, and the no-host guard drops
 * the gap. So:
 * <ol>
 *   <li>the annotation {@value EgressServiceInfo#ALSO_RECEIVE_ANNOTATION}{@code : <old>,<new>}: the new host receives
 *       the steered endpoints too (the old one already does, as host);</li>
 *   <li>wait until the new host's agent lists the service on {@code GET /hosting} ({@link Hosting}), at most {@link
 *       PlannedMoveSettings#readyBound()}; past that the move goes on as without this (said in the Event and the log);</li>
 *   <li>{@code status.host: <new>}: the old host still receives (it is in the annotation) while the steering nodes
 *       switch;</li>
 *   <li>after {@link PlannedMoveSettings#drain()}, the annotation is removed: the old host lets go.</li>
 * </ol>
 * One annotation value naming both nodes, written before the status, means no write sits between two nodes'
 * receiving: each agent sees the annotation before the status (one object's updates arrive in order).
 * Unplanned moves (the old host unreachable, not Ready, deleted or gone) move at once, as before.
 *
 * <p>The allocator's worker calls {@link #mayWrite}, {@link #written} and {@link #settled}; one timer thread reads
 * the new hosts' {@code /hosting} (once per node and interval, whatever the number of services moving there) and
 * removes drained annotations.
 */
final class PlannedMoves implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(PlannedMoves.class);

  private static final class Pending {
    final String from;
    final String to;
    final long startNanos = System.nanoTime();
    volatile boolean done;
    volatile boolean timedOut;
    volatile double seconds;

    Pending(String from, String to) {
      this.from = from;
      this.to = to;
    }
  }

  private final KubernetesClient client;
  private final PlannedMoveSettings settings;
  private final HostingClient hosting;
  private final int port;
  private final boolean probesOn;
  private final Function<String, Optional<java.net.InetAddress>> internalIp;
  private final Consumer<ObjectRef> wake;
  private final BooleanSupplier leading;
  private final String identity;
  private final Map<ObjectRef, Pending> pending = new ConcurrentHashMap<>();
  /** Services whose annotation is to be removed once drained. */
  private final Set<ObjectRef> draining = ConcurrentHashMap.newKeySet();
  private final ScheduledExecutorService timer;

  /**
   * @param internalIp a node's InternalIP (where its agent's probe port listens), from the informer's cache
   * @param wake re-decides a service (its move may go on)
   */
  PlannedMoves(KubernetesClient client, PlannedMoveSettings settings, HostProbes probes,
      Function<String, Optional<java.net.InetAddress>> internalIp, Consumer<ObjectRef> wake, BooleanSupplier leading,
      String identity) {
    this.client = client;
    this.settings = settings;
    this.hosting = new HostingClient(probes.timeout(), probes.netns());
    this.port = probes.port();
    this.probesOn = probes.enabled();
    this.internalIp = internalIp;
    this.wake = wake;
    this.leading = leading;
    this.identity = identity;
    this.timer = Executors.newSingleThreadScheduledExecutor(r -> {
      Thread t = new Thread(r, "egress-allocator-planned-moves");
      t.setDaemon(true);
      return t;
    });
    long every = settings.poll().toNanos();
    timer.scheduleWithFixedDelay(this::poll, every, every, TimeUnit.NANOSECONDS);
  }

  /** Whether a move from {@code from} to {@code to} is planned: the old host can keep receiving meanwhile. */
  static boolean planned(String from, String to, Map<String, NodeState> nodes, Set<String> unreachable) {
    if (from.isEmpty() || to.isEmpty() || from.equals(to) || EgressServiceInfo.HOST_ALL.equals(from)
        || EgressServiceInfo.HOST_ALL.equals(to)) {
      return false;
    }
    NodeState old = nodes.get(from);
    return old != null && old.ready() && !old.deleting() && !old.agentUnreachable() && !unreachable.contains(from)
        && nodes.containsKey(to);
  }

  /**
   * Worker thread: whether {@code status.host} may be written {@code to} now. A planned move starts (annotation)
   * and answers false until the new host reports or the bound passes; anything else answers true.
   */
  boolean mayWrite(EgressService es, String from, String to, Map<String, NodeState> nodes, Set<String> unreachable) {
    ObjectRef ref = PlanInputs.ref(es);
    Pending p = pending.get(ref);
    // /hosting is read where the probes reach; with the probes off (the allocator cannot reach the nodes) a wait
    // could only end at the bound, so every move is immediate.
    if (!probesOn || !planned(from, to, nodes, unreachable)) {
      if (p != null) {
        pending.remove(ref);
        LOG.info("{}: {}: the move {} -> {} is no longer planned (now {} -> {}): moving at once", identity, ref,
            p.from, p.to, from, to);
      }
      return true;
    }
    if (p != null && p.from.equals(from) && p.to.equals(to)) {
      return p.done;
    }
    try {
      annotate(es, Optional.of(from + "," + to));
    } catch (KubernetesClientException e) {
      LOG.warn("{}: {}: cannot write the also-receive annotation for the move {} -> {} ({}): moving at once",
          identity, ref, from, to, e.getMessage());
      return true;
    }
    pending.put(ref, new Pending(from, to));
    LOG.info("{}: {}: planned move {} -> {}: waiting for {} to receive it (at most {} s)", identity, ref, from, to,
        to, settings.readyBound().toMillis() / 1000.0);
    return false;
  }

  /**
   * Worker thread, after {@code status.host} was written {@code to}: starts the drain of a planned move; removes a
   * left-over annotation of any other. Returns a note for the Event.
   */
  Optional<String> written(EgressService es, String from, String to) {
    ObjectRef ref = PlanInputs.ref(es);
    Pending p = pending.remove(ref);
    if (p == null || !p.to.equals(to)) {
      if (!PlanInputs.alsoReceive(es).isEmpty()) {
        removeQuietly(ref);
      }
      return Optional.empty();
    }
    drain(ref);
    return Optional.of(p.timedOut
        ? "planned move: node " + to + " did not report that it receives the service within "
            + settings.readyBound().toSeconds() + " s, moved anyway (datagrams may be lost); "
        : String.format(java.util.Locale.ROOT, "planned move: node %s received the service after %.2f s, node %s"
            + " keeps receiving for %d s; ", to, p.seconds, from, settings.drain().toSeconds()));
  }

  /**
   * Worker thread, for a service whose status is as decided: an also-receive annotation that no move in progress
   * needs (left by a leader that stopped mid-move, or a move given up) is removed.
   */
  void settled(EgressService es) {
    ObjectRef ref = PlanInputs.ref(es);
    Pending p = pending.remove(ref);
    String host = es.getStatus() == null || es.getStatus().getHost() == null ? "" : es.getStatus().getHost();
    if (p != null && p.to.equals(host)) {
      drain(ref); // someone else wrote the status meanwhile: the old host still lets go only after the drain
    } else if (!draining.contains(ref) && !PlanInputs.alsoReceive(es).isEmpty()) {
      removeQuietly(ref);
    }
  }

  /** The old host keeps receiving for the drain period, then the annotation goes. */
  private void drain(ObjectRef ref) {
    draining.add(ref);
    try {
      timer.schedule(() -> {
        draining.remove(ref);
        if (leading.getAsBoolean()) {
          removeQuietly(ref);
        }
      }, settings.drain().toNanos(), TimeUnit.NANOSECONDS);
    } catch (java.util.concurrent.RejectedExecutionException e) {
      draining.remove(ref); // closed
    }
  }

  /** Timer thread: reads each waited-for node's /hosting once; moves on what is ready or overdue. */
  private void poll() {
    try {
      Map<String, List<Map.Entry<ObjectRef, Pending>>> byNode = new HashMap<>();
      pending.entrySet().stream().filter(e -> !e.getValue().done)
          .forEach(e -> byNode.computeIfAbsent(e.getValue().to, n -> new java.util.ArrayList<>()).add(e));
      for (Map.Entry<String, List<Map.Entry<ObjectRef, Pending>>> n : byNode.entrySet()) {
        Optional<Set<String>> receiving = internalIp.apply(n.getKey())
            .flatMap(ip -> hosting.read(n.getKey(), new InetSocketAddress(ip, port)))
            .map(h -> Set.copyOf(h.receiving()));
        long now = System.nanoTime();
        for (Map.Entry<ObjectRef, Pending> e : n.getValue()) {
          Pending p = e.getValue();
          boolean ready = receiving.map(r -> r.contains(e.getKey().toString())).orElse(false);
          boolean overdue = now - p.startNanos >= settings.readyBound().toNanos();
          if (!ready && !overdue) {
            continue;
          }
          p.seconds = (now - p.startNanos) / 1e9;
          p.timedOut = !ready;
          p.done = true;
          if (ready) {
            LOG.info("{}: {}: node {} receives it after {} s: moving from {}", identity, e.getKey(), p.to,
                p.seconds, p.from);
          } else {
            LOG.warn("{}: {}: node {} did not report that it receives it within {} s: moving from {} anyway",
                identity, e.getKey(), p.to, settings.readyBound().toSeconds(), p.from);
          }
          wake.accept(e.getKey());
        }
      }
    } catch (RuntimeException e) {
      LOG.warn("{}: reading /hosting failed: {}", identity, e.toString());
    }
  }

  private void removeQuietly(ObjectRef ref) {
    try {
      patch(ref, Optional.empty());
    } catch (KubernetesClientException e) {
      LOG.warn("{}: {}: cannot remove the also-receive annotation ({}); the next pass tries again", identity, ref,
          e.getMessage());
    }
  }

  private void annotate(EgressService es, Optional<String> nodes) {
    patch(PlanInputs.ref(es), nodes);
  }

  /** JSON merge patch of the one annotation (null removes it); the object being gone is no error. */
  private void patch(ObjectRef ref, Optional<String> nodes) {
    ObjectNode root = JsonNodeFactory.instance.objectNode();
    ObjectNode annotations = root.putObject("metadata").putObject("annotations");
    nodes.ifPresentOrElse(v -> annotations.put(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION, v),
        () -> annotations.putNull(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION));
    try {
      client.resources(EgressService.class).inNamespace(ref.namespace()).withName(ref.name())
          .patch(PatchContext.of(PatchType.JSON_MERGE), root.toString());
    } catch (KubernetesClientException e) {
      if (e.getCode() != 404) {
        throw e;
      }
    }
  }

  @Override
  public void close() {
    timer.shutdownNow();
    hosting.close();
  }
}

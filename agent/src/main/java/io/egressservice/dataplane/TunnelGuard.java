package io.egressservice.dataplane;

import io.egressservice.kernel.Kernel;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Routing;
import io.egressservice.nft.GuardNftables;
import io.egressservice.kernel.Nftables;
import io.egressservice.kernel.NftException;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpPrefix;
import java.util.Collection;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * The dataplane's side of the guard table ({@link GuardNftables}): written from the whole desired state on a full
 * reconcile, by element from the changed services on the fast path. It is written before the rest of a reconcile,
 * so that the steering port is guarded before the device that listens on it exists. Never throws for a kernel
 * refusal: it returns what failed, and the next full reconcile writes the table whole.
 *
 * <p>One exception to "before": a source that becomes steered away ({@code away_}) enters its set only
 * {@link #afterApply after} the reconcile's rules. Until its rule looks up the steering table it still leaves through
 * this node's own route, SNATed here (the old host of a planned move, say); in the set before that, it would be
 * dropped for the length of the reconcile.
 */
final class TunnelGuard implements AutoCloseable {
  private static final Logger LOG = LoggerFactory.getLogger(TunnelGuard.class);
  /** The table is listed (to repair a deleted one) at most this often; otherwise written on change only. */
  private static final long VERIFY_NANOS = 30_000_000_000L;

  private final Nftables client;
  private final GuardNftables table;
  /** Called after each commit of ours: the other tables' listing caches see the generation move. */
  private final Runnable committed;
  /** The devices the port accepts datagrams on (observed). */
  private final Underlay underlay;
  private GuardInputs inputs;
  /** Sources that became steered away, to enter their set once the reconcile's rules are applied. */
  private final Set<IpPrefix> pendingAway = new java.util.LinkedHashSet<>();
  private long lastVerifyNanos = System.nanoTime() - VERIFY_NANOS;

  TunnelGuard(Kernel kernel, Runnable committed) {
    this.client = kernel.openNftables();
    this.table = new GuardNftables(client);
    this.committed = committed;
    this.underlay = new Underlay(kernel.routing());
  }

  /** Links or addresses may have changed: the next full write reads the devices that reach the Nodes again. */
  void invalidateUnderlay() {
    underlay.invalidate();
  }

  /** The table for {@code desired}, from scratch; the failures, if any. */
  List<String> sync(DesiredState desired) {
    long t = System.nanoTime();
    boolean verify = t - lastVerifyNanos >= VERIFY_NANOS;
    inputs = null;
    try {
      GuardInputs in = GuardInputs.of(desired);
      in.underlay(desired.steering().peers().steers()
          ? underlay.devices(desired.steering().peers().nodeInternalIps(), verify) : List.of());
      writeWhole(in, verify);
      committed.run();
      inputs = in;
      if (verify) {
        lastVerifyNanos = t;
      }
      return List.of();
    } catch (NftException | IllegalStateException | NetlinkException e) {
      return List.of(failure(e));
    }
  }

  /** The fast path: the sources of the {@code changed} services by element, O(their endpoints). */
  List<String> syncChanged(DesiredState previous, DesiredState next, Set<ObjectRef> changed) {
    GuardInputs in = inputs;
    if (in == null || !in.sameShape(next)) {
      return sync(next); // node-wide inputs moved (Nodes, port, in-cluster destinations): rare
    }
    inputs = null;
    try {
      GuardInputs.Delta d = in.update(previous, next, changed);
      pendingAway.removeAll(d.awayRemoved());
      pendingAway.addAll(d.awayAdded());
      if (d.reshaped() || !table.updateElements(d.addedBeforeRules(), d.removed())) {
        writeWhole(in, false);
      }
      committed.run();
      inputs = in;
      return List.of();
    } catch (NftException | IllegalStateException e) {
      table.invalidate();
      return List.of(failure(e));
    }
  }

  /** The table from {@code in}, but for the steered-away sources not in it yet: those wait for {@link #afterApply}. */
  private void writeWhole(GuardInputs in, boolean verify) {
    GuardNftables.Sources all = in.sources();
    Set<IpPrefix> there = table.writtenAway();
    pendingAway.clear();
    all.away().stream().filter(p -> !there.contains(p)).forEach(pendingAway::add);
    table.sync(in.shape(), new GuardNftables.Sources(all.steered(), all.ours(), all.received(),
        all.away().stream().filter(there::contains).toList(), all.senders()), verify);
  }

  /** After the reconcile's rules: the sources that became steered away enter their set. The failures, if any. */
  List<String> afterApply() {
    if (pendingAway.isEmpty()) {
      return List.of();
    }
    List<IpPrefix> away = List.copyOf(pendingAway);
    pendingAway.clear();
    try {
      table.updateElements(new GuardNftables.Sources(List.of(), List.of(), List.of(), away), GuardNftables.Sources.NONE);
      committed.run();
      return List.of();
    } catch (NftException | IllegalStateException e) {
      table.invalidate();
      inputs = null;
      return List.of(failure(e));
    }
  }

  /** How long new inbound connections to a source are held off while its flows restart (see below). */
  static final java.time.Duration RESTART_HOLD = java.time.Duration.ofSeconds(1);

  /**
   * Right before the conntrack entries of {@code sources} go: new connections from outside the cluster to them are
   * dropped for {@link #RESTART_HOLD} ({@link GuardNftables#holdNewInbound}). Best effort: a failure is logged and the
   * restart goes on without it (a later reconcile is no better placed to do it).
   */
  void holdNewInbound(Collection<IpPrefix> sources) {
    if (sources.isEmpty()) {
      return;
    }
    try {
      if (table.holdNewInbound(sources, RESTART_HOLD)) {
        committed.run();
      }
    } catch (NftException | IllegalStateException e) {
      LOG.warn("{}: new inbound connections to {} restarting source(s) not held off: {}", GuardNftables.TABLE,
          sources.size(), e.getMessage());
    }
  }

  /** Whether the fast path can take its inputs from the last write (otherwise the caller reconciles in full). */
  boolean current() {
    return inputs != null;
  }

  /** Removes the table if present (cleanup); true when there was one. */
  boolean delete() {
    boolean present = client.tablePresent("inet", GuardNftables.TABLE);
    if (present) {
      table.delete();
    }
    inputs = null;
    return present;
  }

  /** Packets dropped by the guard since this agent started, by counter; empty when unreadable. */
  Map<String, Long> droppedPackets() {
    try {
      return table.droppedPackets();
    } catch (NftException | IllegalStateException e) {
      return Map.of();
    }
  }

  private static String failure(RuntimeException e) {
    return "nft table inet " + GuardNftables.TABLE + " (steering port and source guard): " + e.getMessage();
  }

  @Override
  public void close() {
    client.close();
  }
}

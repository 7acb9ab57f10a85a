package io.egressservice.dataplane;

import static io.egressservice.dataplane.SourceCounts.count;
import static io.egressservice.dataplane.SourceCounts.cancel;

import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.GuardNftables;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceOutcome;
import io.egressservice.plan.ServiceParts;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.SteeredEndpoint;
import io.egressservice.plan.SteeringPeers;
import io.egressservice.plan.TunnelSender;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.Set;

/**
 * What the guard table is written from, kept current per service: the remote endpoints other nodes steer here
 * (the hosted services' {@code steeredIn}), every source this node SNATs or steers and, of those, the ones it steers
 * to their host (which leave only through the tunnel), each counted (one address
 * may come from several entries), the (outer node address, inner source) pairs the steering port accepts (each
 * steered-in endpoint from its own Node), and the LB IPs a planned move hands over (a flow its old host SNATed before
 * the move arrives with one, see {@link GuardNftables}), which only the plan's hand-over pairs put here. A full reconcile rebuilds it; the fast path moves the changed services' parts
 * only, so one endpoint change costs O(that service).
 *
 * <p>When the table exists: always with steering on, since every node must keep its pods off the other nodes'
 * steering port (a pod's packet to another node is masqueraded to its node's address, which that node trusts),
 * whether or not it steers or hosts anything itself; with steering off only while some source opted in here
 * (nothing else to guard).
 */
final class GuardInputs {
  private final Map<IpPrefix, Integer> steered = new HashMap<>();
  private final Map<IpPrefix, Integer> ours = new HashMap<>();
  /** The LB IPs a planned move hands over here, counted per (node, LB IP) pair the plan accepts. */
  private final Map<IpPrefix, Integer> received = new HashMap<>();
  /** The (outer node address, inner source) pairs the steering port accepts, counted per service that names them. */
  private final Map<GuardNftables.Sender, Integer> senders = new HashMap<>();
  /** The local sources this node steers to their host (out only through the tunnel). */
  private final Map<IpPrefix, Integer> away = new HashMap<>();
  private final SteeringPeers peers;
  private final int port;
  private final List<IpPrefix> inCluster;
  /** The devices that reach the other Nodes (observed, set by the guard before it writes). */
  private List<String> underlay = List.of();

  /** Sources that appeared and disappeared in one update, and whether the table comes or goes with them. */
  record Delta(List<IpPrefix> steeredAdded, List<IpPrefix> steeredRemoved, List<IpPrefix> oursAdded,
      List<IpPrefix> oursRemoved, List<IpPrefix> receivedAdded, List<IpPrefix> receivedRemoved,
      List<IpPrefix> awayAdded, List<IpPrefix> awayRemoved, List<GuardNftables.Sender> sendersAdded,
      List<GuardNftables.Sender> sendersRemoved, boolean reshaped) {
    /** What enters the sets before the reconcile's rules: all but the steered-away sources (see TunnelGuard). */
    GuardNftables.Sources addedBeforeRules() {
      return new GuardNftables.Sources(steeredAdded, oursAdded, receivedAdded, List.of(), sendersAdded);
    }

    GuardNftables.Sources removed() {
      return new GuardNftables.Sources(steeredRemoved, oursRemoved, receivedRemoved, awayRemoved, sendersRemoved);
    }
  }

  private GuardInputs(SteeringPeers peers, int port, List<IpPrefix> inCluster) {
    this.peers = peers;
    this.port = port;
    this.inCluster = List.copyOf(inCluster);
  }

  static GuardInputs of(DesiredState d) {
    GuardInputs in = new GuardInputs(d.steering().peers(), d.steering().port(), d.inCluster());
    in.move(d.snat(), d.steering().endpoints(), d.services(), 1, null);
    return in;
  }

  /**
   * Whether {@code next} keeps what the table's shape is written from (peers, port, in-cluster destinations);
   * when not, the caller rebuilds with {@link #of}.
   */
  boolean sameShape(DesiredState next) {
    return peers.equals(next.steering().peers()) && port == next.steering().port()
        && inCluster.equals(next.inCluster());
  }

  /** Takes the {@code changed} services' part of {@code before} out and puts that of {@code after} in. */
  Delta update(DesiredState before, DesiredState after, Set<ObjectRef> changed) {
    boolean present = shape().isPresent();
    Delta d = new Delta(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(),
        new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), false);
    move(ServiceParts.of(before.snat(), changed, SnatEntry::service),
        ServiceParts.of(before.steering().endpoints(), changed, SteeredEndpoint::service),
        ServiceParts.of(before.services(), changed, ServiceOutcome::service), -1, d);
    move(ServiceParts.of(after.snat(), changed, SnatEntry::service),
        ServiceParts.of(after.steering().endpoints(), changed, SteeredEndpoint::service),
        ServiceParts.of(after.services(), changed, ServiceOutcome::service), 1, d);
    // A source that went and came back within the update is no change.
    cancel(d.steeredAdded(), d.steeredRemoved());
    cancel(d.oursAdded(), d.oursRemoved());
    cancel(d.receivedAdded(), d.receivedRemoved());
    cancel(d.awayAdded(), d.awayRemoved());
    cancel(d.sendersAdded(), d.sendersRemoved());
    return new Delta(d.steeredAdded(), d.steeredRemoved(), d.oursAdded(), d.oursRemoved(), d.receivedAdded(),
        d.receivedRemoved(), d.awayAdded(), d.awayRemoved(), d.sendersAdded(), d.sendersRemoved(),
        present != shape().isPresent());
  }

  private void move(List<SnatEntry> snat, List<SteeredEndpoint> steering, List<ServiceOutcome> outcomes, int sign,
      Delta delta) {
    for (SnatEntry e : snat) {
      count(ours, e.source(), sign, delta == null ? null : delta.oursAdded(), delta == null ? null : delta.oursRemoved());
    }
    for (SteeredEndpoint e : steering) {
      count(ours, e.source(), sign, delta == null ? null : delta.oursAdded(), delta == null ? null : delta.oursRemoved());
      count(away, e.source(), sign, delta == null ? null : delta.awayAdded(), delta == null ? null : delta.awayRemoved());
    }
    for (ServiceOutcome o : outcomes) {
      for (String raw : o.steeredIn()) {
        Optional<IpPrefix> p = IpPrefix.tryParse(raw).filter(IpPrefix::isHost);
        if (p.isPresent()) {
          count(steered, p.get(), sign, delta == null ? null : delta.steeredAdded(),
              delta == null ? null : delta.steeredRemoved());
        }
      }
      // Each pair once per service; the LB IP leaves the tunnel only while a planned move hands it over.
      Set<IpPrefix> handedOver = new HashSet<>();
      for (TunnelSender t : new LinkedHashSet<>(o.tunnelSenders())) {
        count(senders, new GuardNftables.Sender(t.nodeAddress(), t.innerSource()), sign,
            delta == null ? null : delta.sendersAdded(), delta == null ? null : delta.sendersRemoved());
        if (t.handOver() && handedOver.add(t.innerSource())) {
          count(received, t.innerSource(), sign, delta == null ? null : delta.receivedAdded(),
              delta == null ? null : delta.receivedRemoved());
        }
      }
    }
  }

  /** Sets the devices the port accepts datagrams on (observed on the node, not planned). */
  void underlay(List<String> devices) {
    underlay = List.copyOf(devices);
  }

  /** The table's shape; empty: no table (steering off and no source of ours). */
  Optional<GuardNftables.Shape> shape() {
    if (!peers.steers() && ours.isEmpty() && steered.isEmpty()) {
      return Optional.empty();
    }
    return Optional.of(new GuardNftables.Shape(peers.steers() ? OptionalInt.of(port) : OptionalInt.empty(),
        peers.nodeInternalIps(), peers.nodeAddresses(), inCluster, peers.steers() ? underlay : List.of()));
  }

  List<IpPrefix> steered() {
    return List.copyOf(steered.keySet());
  }

  List<IpPrefix> ours() {
    return List.copyOf(ours.keySet());
  }

  List<IpPrefix> received() {
    return List.copyOf(received.keySet());
  }

  /** Every set's sources, as the table is written from them. */
  GuardNftables.Sources sources() {
    return new GuardNftables.Sources(steered(), ours(), received(), List.copyOf(away.keySet()),
        List.copyOf(senders.keySet()));
  }
}

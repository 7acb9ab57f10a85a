package io.egressservice.dataplane;

import static io.egressservice.dataplane.SourceCounts.count;
import static io.egressservice.dataplane.SourceCounts.cancel;

import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.NoHostNftables.Hold;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.HeldEndpoint;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.SteeredEndpoint;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * What the no-host table is written from, kept current per service: the LB IPs this node SNATs to and the
 * sources it SNATs or steers (counted, since one address may come from several entries), and the held endpoints
 * by service. A full reconcile rebuilds it; the fast path moves the changed services' parts, learning which
 * elements appear and disappear without a pass over the others.
 */
final class NoHostInputs {
  private final Map<IpPrefix, Integer> lbIps = new HashMap<>();
  private final Map<IpPrefix, Integer> ours = new HashMap<>();
  private final Map<ObjectRef, List<HeldEndpoint>> held = new TreeMap<>();
  private final boolean receives;
  private final List<IpPrefix> inCluster;

  /** Elements that appeared and disappeared in one update, and whether the table's structure moved. */
  record Delta(List<IpPrefix> lbAdded, List<IpPrefix> lbRemoved, List<IpPrefix> oursAdded, List<IpPrefix> oursRemoved,
      boolean reshaped) {}

  private NoHostInputs(boolean receives, List<IpPrefix> inCluster) {
    this.receives = receives;
    this.inCluster = List.copyOf(inCluster);
  }

  static NoHostInputs of(DesiredState d) {
    NoHostInputs in = new NoHostInputs(d.steering().receives(), d.inCluster());
    in.move(d, 1, null);
    return in;
  }

  /** Takes {@code before} (the changed services' part that was applied) out and puts {@code after} in. */
  Delta update(DesiredState before, DesiredState after) {
    boolean guard = guard();
    Map<ObjectRef, List<HeldEndpoint>> heldBefore = new HashMap<>();
    before.held().forEach(h -> heldBefore.computeIfAbsent(h.service(), k -> new ArrayList<>()).add(h));
    Map<ObjectRef, List<HeldEndpoint>> heldAfter = new HashMap<>();
    after.held().forEach(h -> heldAfter.computeIfAbsent(h.service(), k -> new ArrayList<>()).add(h));
    Delta d = new Delta(new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), new ArrayList<>(), false);
    move(before, -1, d);
    move(after, 1, d);
    // A source that went and came back within the update is no change.
    cancel(d.lbAdded(), d.lbRemoved());
    cancel(d.oursAdded(), d.oursRemoved());
    boolean reshaped = guard != guard() || !heldBefore.equals(heldAfter);
    return new Delta(d.lbAdded(), d.lbRemoved(), d.oursAdded(), d.oursRemoved(), reshaped);
  }

  private void move(DesiredState d, int sign, Delta delta) {
    for (SnatEntry e : d.snat()) {
      count(lbIps, e.to(), sign, delta == null ? null : delta.lbAdded(), delta == null ? null : delta.lbRemoved());
      count(ours, e.source(), sign, delta == null ? null : delta.oursAdded(), delta == null ? null : delta.oursRemoved());
    }
    for (SteeredEndpoint e : d.steering().endpoints()) {
      count(ours, e.source(), sign, delta == null ? null : delta.oursAdded(), delta == null ? null : delta.oursRemoved());
    }
    for (HeldEndpoint h : d.held()) {
      if (sign > 0) {
        held.computeIfAbsent(h.service(), k -> new ArrayList<>()).add(h);
      } else {
        held.remove(h.service());
      }
    }
  }

  boolean guard() {
    return !ours.isEmpty() || receives;
  }

  List<Hold> holds() {
    List<Hold> out = new ArrayList<>();
    held.values().forEach(list -> list.forEach(h -> out.add(new Hold(h.service().toString(), h.source()))));
    return out;
  }

  List<IpPrefix> lbIps() {
    return List.copyOf(lbIps.keySet());
  }

  List<IpPrefix> ours() {
    return List.copyOf(ours.keySet());
  }

  List<IpPrefix> inCluster() {
    return inCluster;
  }
}

package io.egressservice.dataplane;

import io.egressservice.kernel.Kernel;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Address;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Routing;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables;
import io.egressservice.nft.MarkNftables;
import io.egressservice.kernel.NftException;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.NetworkResolution;
import io.egressservice.model.RuleMode;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * What the agent reads of one namespace's kernel: the owned state (one dump of rules, throw routes, the nft tables
 * and the steering device) and the node facts the plan needs. It remembers what it read, and what the reconciles
 * that succeeded since applied, so that the fast path can plan without a dump.
 */
final class KernelView {
  private final Kernel kernel;
  private final Routing netlink;
  private final EgressNftables nft;
  private final MarkNftables marks;
  private final SteeringDataplane steering;
  private final int priority;
  private final int protocol;
  private final RtTablesCache rtTables = new RtTablesCache(RtTables.DEFAULT_FILES);
  private final TableRouteReader tableRoutes;

  /** Links as last listed; null: list them. */
  private volatile List<Link> knownLinks;
  private volatile List<IpPrefix> knownAddresses;
  /** Marks and steering tables the kernel holds, by the last observation or the last successful apply. */
  private volatile Map<Long, Long> knownMarks;
  private volatile Map<Long, Set<IpPrefix>> knownSteerTables;
  /** The reverse-path facts of the last full reconcile in mark mode and the networks they were read for. */
  private ReversePath.State knownReversePath = ReversePath.State.NONE;
  private Set<Long> knownReversePathTables = Set.of();

  KernelView(Kernel kernel, EgressNftables nft, MarkNftables marks,
      SteeringDataplane steering, int priority, int protocol) {
    this.kernel = kernel;
    this.netlink = kernel.routing();
    this.nft = nft;
    this.marks = marks;
    this.steering = steering;
    this.priority = priority;
    this.protocol = protocol;
    this.tableRoutes = new TableRouteReader(netlink, kernel.describe());
  }

  private String describe() {
    return kernel.describe();
  }

  /** See {@link Dataplane#observe()}. */
  ObservedState observe() {
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

  NetworkResolution resolveNetworks(Collection<String> networks, RtTables rtTables) {
    try {
      return NetworkResolver.resolve(networks, netlink.listLinks(), rtTables);
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot list links of " + describe() + ": " + e.getMessage(), e);
    }
  }

  List<IpPrefix> localAddresses() {
    try {
      // Not the steering device's own link-local address: the agent put it there, and counting it would make
      // the plan differ before and after the device exists (no traffic ever goes to it).
      return netlink.listAddresses().stream().map(Address::local)
          .filter(a -> !a.equals(SteeringDataplane.DEVICE_ADDRESS)).distinct().toList();
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot list addresses of " + describe() + ": " + e.getMessage(), e);
    }
  }

  /** The facts from {@code observed} and the given {@code links} (no second dump). */
  KernelFacts facts(Collection<String> networks, ObservedState observed, List<Link> links) {
    knownLinks = links;
    knownAddresses = localAddresses();
    NetworkResolution resolved = NetworkResolver.resolve(networks, links, rtTables.current());
    resolved = resolved.withRoutes(tableRoutes.read(resolved.tablesOf(networks)));
    return new KernelFacts(resolved, knownAddresses, existingMarks(observed.rules()), observed.steering().tables());
  }

  /** See {@link Dataplane#currentFacts(Collection)}. */
  KernelFacts currentFacts(Collection<String> networks) {
    if (knownMarks == null || knownSteerTables == null) {
      observe();
    }
    if (knownLinks == null) {
      knownLinks = links();
    }
    if (knownAddresses == null) {
      knownAddresses = localAddresses();
    }
    NetworkResolution resolved = NetworkResolver.resolve(networks, knownLinks, rtTables.current());
    resolved = resolved.withRoutes(tableRoutes.current(resolved.tablesOf(networks)));
    return new KernelFacts(resolved, knownAddresses, knownMarks, knownSteerTables);
  }

  /** See {@link Dataplane#mayEndNoRouteWarning(Route)}. */
  boolean mayEndNoRouteWarning(Route added) {
    return tableRoutes.awaited(added);
  }

  void invalidateFacts() {
    knownLinks = null;
    knownAddresses = null;
  }

  /** After a reconcile that succeeded, the kernel holds {@code desired}: the facts follow it, not the old dump. */
  void learnApplied(DesiredState desired) {
    Map<Long, Long> marksNow = new HashMap<>();
    for (Rule r : Differ.wantedRules(desired).keySet()) {
      if (r.priority() == priority && r.fwmark().isPresent() && r.source().isEmpty()) {
        marksNow.putIfAbsent(Integer.toUnsignedLong(r.table()), r.fwmark().getAsLong());
      }
    }
    Map<Long, Set<IpPrefix>> steerNow = new HashMap<>();
    desired.steering().routes().forEach(r -> steerNow.computeIfAbsent(r.table(), k -> new HashSet<>())
        .add(r.hostAddress()));
    knownMarks = marksNow;
    knownSteerTables = steerNow;
  }

  /** The marks the kernel holds by table, as last known; empty before the first observation. */
  Map<Long, Long> knownMarks() {
    Map<Long, Long> known = knownMarks;
    return known == null ? Map.of() : known;
  }

  List<Link> links() {
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

  /** The MTU the steering device should have for the plan's hosts (only looked up while steering is wanted). */
  int steeringMtu(DesiredState desired) {
    return desired.steering().deviceWanted() ? steeringMtu(desired, links()) : 0;
  }

  int steeringMtu(DesiredState desired, List<Link> links) {
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
  ObservedState withReversePath(DesiredState desired, ObservedState observed, List<Link> links) {
    if (desired.ruleMode() != RuleMode.MARK || desired.networkMarks().isEmpty()) {
      return observed;
    }
    try {
      ReversePath.State state = ReversePath.observe(kernel, links, desired.networkMarks().keySet());
      knownReversePath = state;
      knownReversePathTables = Set.copyOf(desired.networkMarks().keySet());
      return observed.withReversePath(state);
    } catch (NetlinkException e) {
      throw new DataplaneException("cannot read the uplinks of the marked networks in " + describe() + ": "
          + e.getMessage(), e);
    }
  }

  /** The reverse-path facts of the last full reconcile in mark mode. */
  ReversePath.State knownReversePath() {
    return knownReversePath;
  }

  /** Whether the known reverse-path facts were read for exactly these networks' tables. */
  boolean reversePathReadFor(Set<Long> tables) {
    return knownReversePathTables.equals(tables);
  }
}

package io.egressservice.explain;

import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.ObservedState;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteQuery;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Rule;
import io.egressservice.nft.EgressNftables.IpRange;
import io.egressservice.nft.EgressNftables.SnatElement;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.kernel.Nftables;
import io.egressservice.plan.SteeringPlan;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.stream.Collectors;

/**
 * Asks one node's kernel what it does with a packet of a local pod: the route the kernel picks for it arriving on the
 * pod's interface with the mark our nft map would give it, then which of our rules and throw routes took part, and
 * what our SNAT, no-host and guard tables do with it. It reads; it changes nothing.
 */
public final class KernelInspector {
  private final Dataplane dp;
  private final Nftables nft;

  public KernelInspector(Dataplane dp, Nftables nft) {
    this.dp = dp;
    this.nft = nft;
  }

  /**
   * The verdict for {@code source} (a pod on this node) sending to {@code destination}.
   *
   * @throws ExplainException when the source is not a pod of this node, or the kernel refuses the lookup
   */
  public KernelVerdict inspect(IpPrefix source, IpPrefix destination) {
    ObservedState observed = dp.observe();
    Map<Integer, String> links = dp.kernel().routing().listLinks().stream()
        .collect(Collectors.toMap(Link::index, Link::name, (a, b) -> a));
    RouteQuery.Answer toPod = lookup(RouteQuery.Lookup.to(source));
    if (toPod.gateway().isPresent() || toPod.outputInterface().isEmpty() || toPod.type() != RouteType.UNICAST) {
      throw new ExplainException(source.addressText() + " is not a pod of this node (" + dp.describe() + "): the node"
          + " routes it " + toPod.gateway().map(g -> "via " + g.addressText() + " ").orElse("")
          + toPod.outputInterface().stream().mapToObj(i -> "dev " + links.getOrDefault(i, "#" + i)).findFirst()
              .orElse(toPod.type().name().toLowerCase(Locale.ROOT))
          + "; run explain on the node the pod runs on");
    }
    int podIf = toPod.outputInterface().getAsInt();
    List<String> notes = new ArrayList<>();

    Optional<MarkElement> markElement = Optional.ofNullable(observed.marks().elements().get(source));
    long mark = markElement.map(m -> observed.marks().networkChains().getOrDefault(m.table(), 0L)).orElse(0L);
    boolean inCluster = observed.nft().inCluster().stream().anyMatch(r -> contains(r, destination));

    RouteQuery.Answer answer = lookup(new RouteQuery.Lookup(destination, Optional.of(source), OptionalInt.of(podIf), mark));
    String out = answer.outputInterface().stream().mapToObj(i -> links.getOrDefault(i, "#" + i)).findFirst().orElse("");

    Optional<Rule> rule = matchingRule(observed, source, destination, mark);
    Optional<String> thrownBy = Optional.empty();
    if (rule.isPresent() && Integer.toUnsignedLong(rule.get().table()) != answer.table()) {
      long t = Integer.toUnsignedLong(rule.get().table());
      thrownBy = observed.routes().stream()
          .filter(r -> Integer.toUnsignedLong(r.table()) == t && r.type() == RouteType.THROW && r.family() == source.family())
          .filter(r -> r.destination().map(d -> d.contains(destination)).orElse(true))
          .max(Comparator.comparingInt(r -> r.destination().map(IpPrefix::length).orElse(0)))
          .map(KernelInspector::throwText);
    }
    Optional<IpPrefix> steeredTo = Optional.empty();
    if (out.equals(SteeringPlan.DEVICE)) {
      steeredTo = observed.steering().routes().stream()
          .filter(r -> Integer.toUnsignedLong(r.table()) == answer.table() && r.family() == source.family())
          .flatMap(r -> r.encap().stream()).map(e -> e.destination()).findFirst();
      if (steeredTo.isEmpty()) {
        notes.add("it leaves by " + SteeringPlan.DEVICE + " but table " + answer.table() + " has no steering route of ours");
      }
    }
    Optional<SnatElement> snat = observed.nft().snat().stream().filter(e -> e.source().equals(source)).findFirst();
    NftFacts facts = NftFacts.read(nft, source);
    return new KernelVerdict(source, destination, links.getOrDefault(podIf, "#" + podIf), mark, answer.table(),
        answer.type().name().toLowerCase(Locale.ROOT), out, answer.gateway(), rule.map(Rule::toString),
        rule.map(r -> OptionalLong.of(Integer.toUnsignedLong(r.table()))).orElse(OptionalLong.empty()), thrownBy,
        steeredTo, snat.filter(e -> !inCluster).map(SnatElement::target),
        snat.map(SnatElement::comment).or(() -> markElement.map(MarkElement::comment)), inCluster, facts.heldBy(),
        facts.heldDrops(), facts.guarded(), facts.guardDrops(), notes);
  }

  private RouteQuery.Answer lookup(RouteQuery.Lookup q) {
    try {
      return dp.kernel().routing().routeGet(q);
    } catch (NetlinkException e) {
      throw new ExplainException("the kernel of " + dp.describe() + " has no route for it: " + e.getMessage());
    }
  }

  /** The first owned rule, by priority, that selects this packet: by source, or by the mark our map gives it. */
  private static Optional<Rule> matchingRule(ObservedState observed, IpPrefix source, IpPrefix destination, long mark) {
    return observed.rules().stream()
        .filter(r -> r.family() == source.family())
        .filter(r -> r.source().map(s -> s.contains(source)).orElse(true))
        .filter(r -> r.destination().map(d -> d.contains(destination)).orElse(true))
        .filter(r -> r.fwmark().isEmpty() || (mark & r.fwmask().orElse(0xffffffffL)) == r.fwmark().getAsLong())
        .filter(r -> r.source().isPresent() || r.fwmark().isPresent())
        .filter(r -> r.sourcePort().isEmpty())
        .min(Comparator.comparingInt(Rule::priority));
  }

  private static String throwText(Route r) {
    return "throw " + r.destination().map(IpPrefix::toString).orElse("default") + " table " + Integer.toUnsignedLong(r.table());
  }

  private static boolean contains(IpRange r, IpPrefix address) {
    return r.family() == address.family() && r.first().compareTo(address) <= 0 && address.compareTo(r.last()) <= 0;
  }
}

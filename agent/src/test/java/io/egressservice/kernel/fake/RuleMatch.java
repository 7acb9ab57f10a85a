package io.egressservice.kernel.fake;

import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleAction;
import io.egressservice.netlink.RouteQuery;
import java.util.Optional;

/** How the kernel's fib rules compare a request with the rules it holds (net/core/fib_rules.c, fib4_rules.c). */
final class RuleMatch {
  private static final long ALL_ONES = 0xffffffffL;

  private RuleMatch() {}

  /**
   * {@code rule_find}, as a delete matches: what the request leaves unset or zero is a wildcard (table, protocol,
   * fwmark and mask, iif/oif, suppress_prefixlength, goto target, a /0 source or destination, tos, sport); the
   * priority and the action are compared when given, which the agent always does.
   */
  static boolean deleteMatches(Rule request, Rule held) {
    if (request.priority() != 0 && held.priority() != request.priority()) {
      return false;
    }
    if (held.action() != request.action()) {
      return false;
    }
    if (request.table() != 0 && held.table() != request.table()) {
      return false;
    }
    if (request.protocol() != 0 && held.protocol() != request.protocol()) {
      return false;
    }
    if (request.fwmark().isPresent()) {
      if (held.fwmark().isEmpty() || held.fwmark().getAsLong() != request.fwmark().getAsLong()) {
        return false;
      }
      if (held.fwmask().orElse(ALL_ONES) != request.fwmask().orElse(ALL_ONES)) {
        return false;
      }
    }
    if (request.iifName().isPresent() && !request.iifName().equals(held.iifName())) {
      return false;
    }
    if (request.oifName().isPresent() && !request.oifName().equals(held.oifName())) {
      return false;
    }
    if (request.suppressPrefixLength().isPresent()
        && !request.suppressPrefixLength().equals(held.suppressPrefixLength())) {
      return false;
    }
    if (request.gotoTarget().isPresent() && !request.gotoTarget().equals(held.gotoTarget())) {
      return false;
    }
    if (request.source().isPresent() && !request.source().equals(held.source())) {
      return false;
    }
    if (request.destination().isPresent() && !request.destination().equals(held.destination())) {
      return false;
    }
    if (request.tos() != 0 && held.tos() != request.tos()) {
      return false;
    }
    if (request.sourcePort().isPresent() && !request.sourcePort().equals(held.sourcePort())) {
      return false;
    }
    if (request.invert() && !held.invert()) {
      return false;
    }
    return held.otherAttributes().containsAll(request.otherAttributes());
  }

  /**
   * Whether {@code rule} applies to a packet as {@code ip route get} describes it ({@code fib_rule_match}):
   * {@code iifName} is the input device's name, "lo" for the node's own packets.
   */
  static boolean packetMatches(Rule rule, RouteQuery.Lookup q, String iifName) {
    boolean match = rule.iifName().map(iifName::equals).orElse(true)
        && rule.oifName().isEmpty()
        && (rule.fwmark().isEmpty() || (q.mark() & rule.fwmask().orElse(ALL_ONES)) == rule.fwmark().getAsLong())
        && rule.source().map(s -> contains(s, q.source())).orElse(true)
        && rule.destination().map(d -> d.contains(q.destination())).orElse(true)
        && rule.sourcePort().isEmpty()
        && rule.otherAttributes().isEmpty();
    return match != rule.invert();
  }

  private static boolean contains(IpPrefix rule, Optional<IpPrefix> source) {
    return source.map(rule::contains).orElse(false);
  }

  /** Whether the action ends the walk with an error rather than a table lookup. */
  static boolean refuses(RuleAction a) {
    return a == RuleAction.BLACKHOLE || a == RuleAction.UNREACHABLE || a == RuleAction.PROHIBIT;
  }
}

package io.egressservice.netlink;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * A policy routing rule, one line of {@code ip rule show} ({@code struct fib_rule_hdr} plus
 * {@code FRA_*} attributes). Immutable; build it with {@link #lookup} (or {@link #of}, {@link #goTo})
 * and the withers, e.g. {@code Rule.lookup(V4, 5000, 100).from(IpPrefix.parse("10.0.0.5")).protocol(201)}.
 *
 * <p>Normalised the way the kernel reports rules, so that what is built compares equal to what is
 * listed back:
 *
 * <ul>
 *   <li>a /0 source or destination is the same as none ("from all"): the kernel omits FRA_SRC/FRA_DST
 *       when the prefix length is 0;
 *   <li>a fwmask of 0xffffffff is the same as no mask: it is the kernel's default when a mark is given;
 *   <li>a suppress_prefixlength of -1 is the same as none: the kernel reports -1 for "unset";
 *   <li>{@code priority}, {@code table}, {@code protocol} are always set: the kernel reports
 *       priority 0 and protocol 0 ({@code RTPROT_UNSPEC}) when they were not given, and table 0 for
 *       actions other than lookup. Tables above 255 are kept whole (the kernel carries them in
 *       FRA_TABLE; the one-byte header field then says RT_TABLE_COMPAT).
 * </ul>
 *
 * <p>Every selector the kernel reports is kept: those the agent writes have fields, the tos byte too,
 * and any other attribute is kept whole in {@code otherAttributes} ({@link RuleAttribute}), so a rule
 * equals another only when the kernel would treat them as the same rule.
 *
 * <p>{@code priority} and {@code table} are unsigned 32-bit in the kernel; values are kept as Java
 * ints and printed unsigned.
 */
public record Rule(
    IpFamily family,
    int priority,
    Optional<IpPrefix> source,
    Optional<IpPrefix> destination,
    int table,
    int protocol,
    RuleAction action,
    OptionalLong fwmark,
    OptionalLong fwmask,
    OptionalInt suppressPrefixLength,
    Optional<String> iifName,
    Optional<String> oifName,
    OptionalInt gotoTarget,
    boolean invert,
    Optional<PortRange> sourcePort,
    int tos,
    java.util.List<RuleAttribute> otherAttributes) {

  private static final long U32_MAX = 0xffffffffL;

  public Rule {
    Objects.requireNonNull(family, "family");
    Objects.requireNonNull(action, "action");
    source = normalise(family, "source", source);
    destination = normalise(family, "destination", destination);
    if (protocol < 0 || protocol > 255) {
      throw new IllegalArgumentException("rule protocol " + protocol + " is out of range 0..255");
    }
    checkU32("fwmark", fwmark);
    checkU32("fwmask", fwmask);
    if (fwmark.isPresent() && fwmask.isPresent() && fwmask.getAsLong() == U32_MAX) {
      fwmask = OptionalLong.empty();
    }
    Objects.requireNonNull(suppressPrefixLength, "suppressPrefixLength");
    if (suppressPrefixLength.isPresent() && suppressPrefixLength.getAsInt() == -1) {
      suppressPrefixLength = OptionalInt.empty();
    }
    if (suppressPrefixLength.isPresent()
        && (suppressPrefixLength.getAsInt() < 0 || suppressPrefixLength.getAsInt() > family.bits())) {
      throw new IllegalArgumentException("suppress_prefixlength " + suppressPrefixLength.getAsInt() + " is out of range");
    }
    checkIfName("iif", iifName);
    checkIfName("oif", oifName);
    Objects.requireNonNull(gotoTarget, "gotoTarget");
    if (action == RuleAction.GOTO && gotoTarget.isEmpty()) {
      throw new IllegalArgumentException("a goto rule needs a target priority");
    }
    if (action != RuleAction.GOTO && gotoTarget.isPresent()) {
      throw new IllegalArgumentException("a goto target is only valid with action GOTO, not " + action);
    }
    Objects.requireNonNull(sourcePort, "sourcePort");
    if (tos < 0 || tos > 255) {
      throw new IllegalArgumentException("tos " + tos + " is out of range 0..255");
    }
    otherAttributes = otherAttributes.isEmpty() ? java.util.List.of()
        : otherAttributes.stream().sorted().toList();
    for (RuleAttribute a : otherAttributes) {
      if (RuleCodec.isModelled(a.type())) {
        throw new IllegalArgumentException("attribute " + a.type() + " has a field of its own in Rule");
      }
    }
  }

  /** Without a source port (every rule before {@code sport} existed here). */
  public Rule(IpFamily family, int priority, Optional<IpPrefix> source, Optional<IpPrefix> destination, int table,
      int protocol, RuleAction action, OptionalLong fwmark, OptionalLong fwmask, OptionalInt suppressPrefixLength,
      Optional<String> iifName, Optional<String> oifName, OptionalInt gotoTarget, boolean invert) {
    this(family, priority, source, destination, table, protocol, action, fwmark, fwmask, suppressPrefixLength,
        iifName, oifName, gotoTarget, invert, Optional.empty(), 0, java.util.List.of());
  }

  /** {@code sport START[-END]} (FRA_SPORT_RANGE, {@code struct fib_rule_port_range}): an inclusive range. */
  public record PortRange(int start, int end) {
    public PortRange {
      if (start < 1 || end > 65535 || start > end) {
        throw new IllegalArgumentException("port range " + start + "-" + end + " is not within 1..65535");
      }
    }

    public static PortRange of(int port) {
      return new PortRange(port, port);
    }

    @Override
    public String toString() {
      return start == end ? Integer.toString(start) : start + "-" + end;
    }
  }

  /**
   * Field by field, written out: every reconcile hashes and compares each owned rule a few times, and
   * the generated record methods go through method-handle chains that the agent's C1-only JIT
   * (deploy/daemonset.yaml) runs several times slower.
   */
  @Override
  public boolean equals(Object o) {
    return o == this || o instanceof Rule r
        && priority == r.priority && table == r.table && protocol == r.protocol && invert == r.invert
        && family == r.family && action == r.action
        && source.equals(r.source) && destination.equals(r.destination)
        && fwmark.equals(r.fwmark) && fwmask.equals(r.fwmask)
        && suppressPrefixLength.equals(r.suppressPrefixLength) && gotoTarget.equals(r.gotoTarget)
        && iifName.equals(r.iifName) && oifName.equals(r.oifName) && sourcePort.equals(r.sourcePort)
        && tos == r.tos && otherAttributes.equals(r.otherAttributes);
  }

  @Override
  public int hashCode() {
    int h = family.hashCode();
    h = 31 * h + priority;
    h = 31 * h + source.hashCode();
    h = 31 * h + destination.hashCode();
    h = 31 * h + table;
    h = 31 * h + protocol;
    h = 31 * h + action.hashCode();
    h = 31 * h + fwmark.hashCode();
    h = 31 * h + fwmask.hashCode();
    h = 31 * h + suppressPrefixLength.hashCode();
    h = 31 * h + iifName.hashCode();
    h = 31 * h + oifName.hashCode();
    h = 31 * h + gotoTarget.hashCode();
    h = 31 * h + sourcePort.hashCode();
    h = 31 * h + Boolean.hashCode(invert);
    h = 31 * h + tos;
    return 31 * h + otherAttributes.hashCode();
  }

  private static Optional<IpPrefix> normalise(IpFamily family, String what, Optional<IpPrefix> p) {
    Objects.requireNonNull(p, what);
    if (p.isPresent() && p.get().family() != family) {
      throw new IllegalArgumentException(what + " " + p.get() + " is not " + family);
    }
    return p.filter(x -> x.length() > 0);
  }

  private static void checkU32(String what, OptionalLong v) {
    Objects.requireNonNull(v, what);
    if (v.isPresent() && (v.getAsLong() < 0 || v.getAsLong() > U32_MAX)) {
      throw new IllegalArgumentException(what + " " + v.getAsLong() + " is not a 32-bit value");
    }
  }

  private static void checkIfName(String what, Optional<String> name) {
    Objects.requireNonNull(name, what);
    if (name.isPresent() && (name.get().isEmpty() || name.get().length() >= NetlinkConstants.IFNAMSIZ)) {
      throw new IllegalArgumentException(what + " name '" + name.get() + "' must have 1..15 characters");
    }
  }

  /** {@code ip rule add prio PRIORITY lookup TABLE} (from all, protocol unspec). */
  public static Rule lookup(IpFamily family, int priority, int table) {
    return new Rule(family, priority, Optional.empty(), Optional.empty(), table, 0, RuleAction.TO_TABLE,
        OptionalLong.empty(), OptionalLong.empty(), OptionalInt.empty(), Optional.empty(), Optional.empty(),
        OptionalInt.empty(), false, Optional.empty(), 0, java.util.List.of());
  }

  /** {@code ip rule add prio PRIORITY goto TARGET}. The kernel refuses a target at or below PRIORITY. */
  public static Rule goTo(IpFamily family, int priority, int target) {
    return lookup(family, priority, 0).withAction(RuleAction.GOTO, OptionalInt.of(target));
  }

  /** {@code ip rule add prio PRIORITY nop|blackhole|unreachable|prohibit} (table 0). */
  public static Rule of(IpFamily family, int priority, RuleAction action) {
    if (action == RuleAction.GOTO) {
      throw new IllegalArgumentException("use Rule.goTo for a goto rule");
    }
    return lookup(family, priority, 0).withAction(action, OptionalInt.empty());
  }

  private Rule withAction(RuleAction a, OptionalInt target) {
    return new Rule(family, priority, source, destination, table, protocol, a, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, target, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code from PREFIX}. */
  public Rule from(IpPrefix prefix) {
    return new Rule(family, priority, Optional.of(prefix), destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code to PREFIX}. */
  public Rule to(IpPrefix prefix) {
    return new Rule(family, priority, source, Optional.of(prefix), table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code prio N}. */
  public Rule priority(int p) {
    return new Rule(family, p, source, destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code lookup N}. */
  public Rule table(int t) {
    return new Rule(family, priority, source, destination, t, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code proto N} (FRA_PROTOCOL): who owns the rule. */
  public Rule protocol(int p) {
    return new Rule(family, priority, source, destination, table, p, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code fwmark MARK} (the kernel's mask is then 0xffffffff). */
  public Rule fwmark(long mark) {
    return new Rule(family, priority, source, destination, table, protocol, action, OptionalLong.of(mark),
        OptionalLong.empty(), suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code fwmark MARK/MASK}. */
  public Rule fwmark(long mark, long mask) {
    return new Rule(family, priority, source, destination, table, protocol, action, OptionalLong.of(mark),
        OptionalLong.of(mask), suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code suppress_prefixlength N}. */
  public Rule suppressPrefixLength(int n) {
    return new Rule(family, priority, source, destination, table, protocol, action, fwmark, fwmask,
        OptionalInt.of(n), iifName, oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code iif NAME}. */
  public Rule iif(String name) {
    return new Rule(family, priority, source, destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, Optional.of(name), oifName, gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code oif NAME}. */
  public Rule oif(String name) {
    return new Rule(family, priority, source, destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, Optional.of(name), gotoTarget, invert, sourcePort, tos, otherAttributes);
  }

  /** {@code sport PORT}. */
  public Rule sourcePort(int port) {
    return new Rule(family, priority, source, destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, Optional.of(PortRange.of(port)), tos, otherAttributes);
  }

  /** {@code not}: the selector is inverted (FIB_RULE_INVERT). */
  public Rule inverted(boolean not) {
    return new Rule(family, priority, source, destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, not, sourcePort, tos, otherAttributes);
  }

  /** {@code tos N} (the header's tos byte; 0 is none). */
  public Rule tos(int t) {
    return new Rule(family, priority, source, destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, t, otherAttributes);
  }

  /** With one more attribute of a type {@link Rule} has no field for (e.g. FRA_IP_PROTO). */
  public Rule withAttribute(RuleAttribute a) {
    java.util.List<RuleAttribute> all = new java.util.ArrayList<>(otherAttributes);
    all.add(a);
    return new Rule(family, priority, source, destination, table, protocol, action, fwmark, fwmask,
        suppressPrefixLength, iifName, oifName, gotoTarget, invert, sourcePort, tos, all);
  }

  /** Whether the rule selects by anything beyond what the agent writes (source, destination, fwmark, sport, iif, oif). */
  public boolean hasOtherSelectors() {
    return tos != 0 || !otherAttributes.isEmpty();
  }

  /** Prints like {@code ip rule show}, e.g. {@code 5000: from 10.0.0.5 lookup 100 proto 201}. */
  @Override
  public String toString() {
    StringBuilder sb = new StringBuilder();
    sb.append(Integer.toUnsignedString(priority)).append(':');
    if (invert) {
      sb.append(" not");
    }
    sb.append(" from ").append(source.map(IpPrefix::toString).orElse("all"));
    destination.ifPresent(d -> sb.append(" to ").append(d));
    if (tos != 0) {
      sb.append(" tos 0x").append(Integer.toHexString(tos));
    }
    if (fwmark.isPresent()) {
      sb.append(" fwmark 0x").append(Long.toHexString(fwmark.getAsLong()));
      fwmask.ifPresent(m -> sb.append("/0x").append(Long.toHexString(m)));
    }
    iifName.ifPresent(n -> sb.append(" iif ").append(n));
    oifName.ifPresent(n -> sb.append(" oif ").append(n));
    // in iproute2's order: uidrange, ipproto, sport, dport, tun_id before the action; ifgroup and realms after it
    printOthers(sb, a -> !a.printsAfterAction() && !a.isL3mdev() && a.printRank() < RuleAttribute.SPORT_RANK);
    sourcePort.ifPresent(p -> sb.append(" sport ").append(p));
    printOthers(sb, a -> !a.printsAfterAction() && !a.isL3mdev() && a.printRank() > RuleAttribute.SPORT_RANK);
    boolean l3mdev = otherAttributes.stream().anyMatch(RuleAttribute::isL3mdev);
    switch (action) {
      case TO_TABLE -> sb.append(" lookup ").append(l3mdev && table == 0 ? "[l3mdev-table]" : tableName(table));
      case GOTO -> sb.append(" goto ").append(Integer.toUnsignedString(gotoTarget.getAsInt()));
      default -> sb.append(' ').append(action.keyword());
    }
    suppressPrefixLength.ifPresent(n -> sb.append(" suppress_prefixlength ").append(n));
    printOthers(sb, RuleAttribute::printsAfterAction);
    if (protocol != 0) {
      sb.append(" proto ").append(protocolName(protocol));
    }
    return sb.toString();
  }

  private void printOthers(StringBuilder sb, java.util.function.Predicate<RuleAttribute> which) {
    otherAttributes.stream().filter(which).sorted(java.util.Comparator.comparingInt(RuleAttribute::printRank))
        .map(RuleAttribute::toString).filter(t -> !t.isEmpty()).forEach(t -> sb.append(' ').append(t));
  }

  /** "main", "local", "default" or the number, like iproute2 without an rt_tables file. */
  static String tableName(int table) {
    return switch (table) {
      case NetlinkConstants.RT_TABLE_MAIN -> "main";
      case NetlinkConstants.RT_TABLE_LOCAL -> "local";
      case NetlinkConstants.RT_TABLE_DEFAULT -> "default";
      default -> Integer.toUnsignedString(table);
    };
  }

  static String protocolName(int protocol) {
    return switch (protocol) {
      case 2 -> "kernel";
      case 3 -> "boot";
      case 4 -> "static";
      default -> Integer.toString(protocol);
    };
  }
}

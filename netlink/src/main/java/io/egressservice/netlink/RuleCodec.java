package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;

/**
 * {@link Rule} to and from RTM_NEWRULE / RTM_DELRULE messages: {@code struct fib_rule_hdr}
 * (family, dst_len, src_len, tos, table, res1, res2, action: u8 each; flags: u32) then FRA_*
 * attributes.
 *
 * <p>Requests are laid out the way iproute2's {@code ip rule add} lays them out (attributes FRA_SRC,
 * FRA_DST, FRA_TABLE, FRA_PRIORITY, ..., FRA_PROTOCOL; a table above 255 in FRA_TABLE with
 * RT_TABLE_UNSPEC in the header), so a request can be compared byte for byte with what
 * {@code strace ip rule add ...} shows.
 */
final class RuleCodec {
  private RuleCodec() {}

  static void encode(NetlinkMessageWriter w, int type, int flags, int seq, Rule r) {
    w.begin(type, flags, seq);
    boolean smallTable = Integer.compareUnsigned(r.table(), 256) < 0;
    w.u8(r.family().addressFamily())
        .u8(r.destination().map(IpPrefix::length).orElse(0))
        .u8(r.source().map(IpPrefix::length).orElse(0))
        .u8(r.tos())
        .u8(smallTable ? r.table() : RT_TABLE_UNSPEC)
        .u8(0)
        .u8(0)
        .u8(action(r.action()))
        .u32(r.invert() ? FIB_RULE_INVERT : 0);
    r.source().ifPresent(p -> w.attrBytes(FRA_SRC, p.addressBytes()));
    r.destination().ifPresent(p -> w.attrBytes(FRA_DST, p.addressBytes()));
    if (!smallTable) {
      w.attrU32(FRA_TABLE, r.table());
    }
    w.attrU32(FRA_PRIORITY, r.priority());
    r.fwmark().ifPresent(m -> w.attrU32(FRA_FWMARK, (int) m));
    r.fwmask().ifPresent(m -> w.attrU32(FRA_FWMASK, (int) m));
    r.iifName().ifPresent(n -> w.attrString(FRA_IIFNAME, n));
    r.oifName().ifPresent(n -> w.attrString(FRA_OIFNAME, n));
    r.suppressPrefixLength().ifPresent(n -> w.attrU32(FRA_SUPPRESS_PREFIXLEN, n));
    r.gotoTarget().ifPresent(t -> w.attrU32(FRA_GOTO, t));
    r.sourcePort().ifPresent(sp -> w.attrBytes(FRA_SPORT_RANGE, portRange(sp)));
    if (r.protocol() != 0) {
      w.attrU8(FRA_PROTOCOL, r.protocol());
    }
    for (RuleAttribute a : r.otherAttributes()) {
      w.attrBytes(a.type(), a.valueUnsafe());
    }
    w.end();
  }

  /** A dump request for all rules of one family ({@code ip -4 rule show}). */
  static void encodeDump(NetlinkMessageWriter w, int seq, IpFamily family) {
    w.begin(RTM_GETRULE, NLM_F_REQUEST | NLM_F_DUMP, seq);
    w.u8(family.addressFamily()).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u8(0).u32(0);
    w.end();
  }

  /**
   * Decodes the payload of an RTM_NEWRULE / RTM_DELRULE message; empty for families other than
   * inet/inet6 (e.g. ipmr rules).
   */
  static Optional<Rule> decode(ByteBuffer p) {
    if (p.limit() < FIB_RULE_HDR_LEN) {
      throw new IllegalArgumentException("short fib_rule_hdr: " + p.limit() + " bytes");
    }
    int af = Byte.toUnsignedInt(p.get(0));
    if (af != IpFamily.V4.addressFamily() && af != IpFamily.V6.addressFamily()) {
      return Optional.empty();
    }
    IpFamily family = IpFamily.fromAddressFamily(af);
    int dstLen = Byte.toUnsignedInt(p.get(1));
    int srcLen = Byte.toUnsignedInt(p.get(2));
    int tos = Byte.toUnsignedInt(p.get(3));
    int hdrTable = Byte.toUnsignedInt(p.get(4));
    int actionCode = Byte.toUnsignedInt(p.get(7));
    int flags = p.getInt(8);
    NetlinkAttributes a = NetlinkAttributes.parse(p, FIB_RULE_HDR_LEN, p.limit());
    // The header holds RT_TABLE_COMPAT when the table does not fit in a byte; FRA_TABLE is exact.
    int table = a.u32(FRA_TABLE).orElse(hdrTable);
    Optional<IpPrefix> src = a.bytes(FRA_SRC).map(b -> IpPrefix.of(b, srcLen));
    Optional<IpPrefix> dst = a.bytes(FRA_DST).map(b -> IpPrefix.of(b, dstLen));
    OptionalInt fwmark = a.u32(FRA_FWMARK);
    OptionalInt fwmask = a.u32(FRA_FWMASK);
    OptionalLong mark = fwmark.isPresent() ? OptionalLong.of(Integer.toUnsignedLong(fwmark.getAsInt())) : OptionalLong.empty();
    // The kernel reports a mask whenever mark or mask is non-zero; 0xffffffff is its default.
    OptionalLong mask = fwmask.isPresent() ? OptionalLong.of(Integer.toUnsignedLong(fwmask.getAsInt())) : OptionalLong.empty();
    if (mark.isEmpty() && mask.isPresent() && mask.getAsLong() == 0xffffffffL) {
      mask = OptionalLong.empty();
    }
    RuleAction action = action(actionCode);
    OptionalInt gotoTarget = action == RuleAction.GOTO ? a.u32(FRA_GOTO) : OptionalInt.empty();
    if (action == RuleAction.GOTO && gotoTarget.isEmpty()) {
      gotoTarget = OptionalInt.of(0);
    }
    return Optional.of(
        new Rule(
            family,
            a.u32(FRA_PRIORITY).orElse(0),
            src,
            dst,
            table,
            a.u8(FRA_PROTOCOL).orElse(0),
            action,
            mark,
            mask,
            a.u32(FRA_SUPPRESS_PREFIXLEN),
            a.string(FRA_IIFNAME),
            a.string(FRA_OIFNAME),
            gotoTarget,
            (flags & FIB_RULE_INVERT) != 0,
            a.bytes(FRA_SPORT_RANGE).flatMap(RuleCodec::portRange),
            tos,
            a.hasAnyBut(MODELLED) ? others(a) : java.util.List.of()));
  }

  /** The FRA_* types with a field of their own in {@link Rule} (as bits). */
  private static final long MODELLED = bit(FRA_DST) | bit(FRA_SRC) | bit(FRA_IIFNAME) | bit(FRA_GOTO)
      | bit(FRA_PRIORITY) | bit(FRA_FWMARK) | bit(FRA_SUPPRESS_PREFIXLEN) | bit(FRA_TABLE) | bit(FRA_FWMASK)
      | bit(FRA_OIFNAME) | bit(FRA_PROTOCOL) | bit(FRA_SPORT_RANGE);

  private static long bit(int type) {
    return 1L << type;
  }

  private static boolean isFullPortMask(byte[] v) {
    return v.length == 2 && v[0] == (byte) 0xff && v[1] == (byte) 0xff;
  }

  static boolean isModelled(int type) {
    return type < 64 && (MODELLED & bit(type)) != 0;
  }

  private static java.util.List<RuleAttribute> others(NetlinkAttributes a) {
    java.util.List<RuleAttribute> out = new java.util.ArrayList<>();
    for (int type : a.typesBut(MODELLED)) {
      byte[] value = a.bytes(type).orElseThrow();
      if ((type == FRA_SPORT_MASK || type == FRA_DPORT_MASK) && isFullPortMask(value)) {
        continue; // the kernel (6.15+) reports 0xffff for a single port, given or not: the same rule either way
      }
      out.add(new RuleAttribute(type, value));
    }
    return out;
  }

  /** {@code struct fib_rule_port_range}: start and end, u16 each in host order. */
  private static byte[] portRange(Rule.PortRange r) {
    return ByteBuffer.allocate(4).order(java.nio.ByteOrder.nativeOrder())
        .putShort((short) r.start()).putShort((short) r.end()).array();
  }

  /** The kernel reports no range, or a range with start 0, when none was given. */
  private static Optional<Rule.PortRange> portRange(byte[] b) {
    if (b.length < 4) {
      return Optional.empty();
    }
    ByteBuffer buf = ByteBuffer.wrap(b).order(java.nio.ByteOrder.nativeOrder());
    int start = Short.toUnsignedInt(buf.getShort(0));
    int end = Short.toUnsignedInt(buf.getShort(2));
    return start == 0 || end < start ? Optional.empty() : Optional.of(new Rule.PortRange(start, end));
  }

  static int action(RuleAction a) {
    return switch (a) {
      case TO_TABLE -> FR_ACT_TO_TBL;
      case GOTO -> FR_ACT_GOTO;
      case NOP -> FR_ACT_NOP;
      case BLACKHOLE -> FR_ACT_BLACKHOLE;
      case UNREACHABLE -> FR_ACT_UNREACHABLE;
      case PROHIBIT -> FR_ACT_PROHIBIT;
    };
  }

  static RuleAction action(int code) {
    return switch (code) {
      case FR_ACT_TO_TBL -> RuleAction.TO_TABLE;
      case FR_ACT_GOTO -> RuleAction.GOTO;
      case FR_ACT_NOP -> RuleAction.NOP;
      case FR_ACT_BLACKHOLE -> RuleAction.BLACKHOLE;
      case FR_ACT_UNREACHABLE -> RuleAction.UNREACHABLE;
      case FR_ACT_PROHIBIT -> RuleAction.PROHIBIT;
      default -> throw new IllegalArgumentException("unknown fib rule action " + code);
    };
  }
}

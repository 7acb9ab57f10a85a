package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * {@code ip route get}: the kernel's own decision for one packet (RTM_GETROUTE, not a dump), so a caller can say
 * which table routed it without re-implementing the rule walk. With an input interface the kernel routes the packet
 * as if it arrived there ({@code ip_route_input}: rules with {@code iif}, {@code fwmark} and {@code from} all
 * apply, reverse-path filtering too); without one, as if the node itself sent it.
 *
 * <p>The reply names the deciding table because the request sets RTM_F_LOOKUP_TABLE (Linux 4.4 and later; RHEL 9's
 * 5.14 has it; older kernels answer {@code RT_TABLE_MAIN}-style guesses from {@code rtm_table}). RTA_MARK as a
 * query attribute exists since 2.6.x for IPv4 and 4.x for IPv6 (both on 5.14).
 */
public final class RouteQuery {
  private static final int RTA_IIF = 3;
  private static final int RTA_SRC = 2;
  private static final int RTA_PREFSRC = 7;
  private static final int RTA_MARK = 16;
  private static final int RTM_F_LOOKUP_TABLE = 0x1000;

  private RouteQuery() {}

  /**
   * One packet to route.
   *
   * @param destination a single address
   * @param source the packet's source address, if any
   * @param inputInterface the ifindex it arrives on; empty: sent by the node itself
   * @param mark its firewall mark (0: none)
   */
  public record Lookup(IpPrefix destination, Optional<IpPrefix> source, OptionalInt inputInterface, long mark) {
    public Lookup {
      Objects.requireNonNull(destination);
      Objects.requireNonNull(source);
      Objects.requireNonNull(inputInterface);
      if (!destination.isHost()) {
        throw new IllegalArgumentException("a route lookup is for one address, not " + destination);
      }
      if (source.isPresent() && (source.get().family() != destination.family() || !source.get().isHost())) {
        throw new IllegalArgumentException("source " + source.get() + " is not one " + destination.family() + " address");
      }
    }

    public static Lookup to(IpPrefix destination) {
      return new Lookup(destination, Optional.empty(), OptionalInt.empty(), 0);
    }
  }

  /**
   * The kernel's answer.
   *
   * @param table the table whose route decided (RTA_TABLE)
   * @param type unicast, local, unreachable, ...
   * @param outputInterface the ifindex the packet leaves by
   * @param gateway the next hop, if not on link
   * @param preferredSource the source the kernel would pick for a packet of the node's own
   */
  public record Answer(IpFamily family, long table, RouteType type, OptionalInt outputInterface,
      Optional<IpPrefix> gateway, Optional<IpPrefix> preferredSource) {}

  /** Asks the kernel of {@code thread}'s namespace. Errors (no route, rp_filter refusal) are NetlinkExceptions. */
  public static Answer get(NetnsThread thread, Lookup q) {
    return thread.call(() -> {
      try (NetlinkSocket s = NetlinkSocket.open(NETLINK_ROUTE, 0, thread.describe())) {
        s.setOption(SOL_NETLINK, NETLINK_EXT_ACK, 1);
        ByteBuffer send = ByteBuffer.allocateDirect(256);
        NetlinkMessageWriter w = new NetlinkMessageWriter(send);
        int seq = 1;
        encode(w, seq, q);
        s.send(send, w.position());
        ByteBuffer receive = ByteBuffer.allocateDirect(64 * 1024).order(ByteOrder.nativeOrder());
        // bounded: the kernel answers one message or one error; a few foreign datagrams at most
        for (int i = 0; i < 16; i++) {
          int len = s.receive(receive);
          if (len < 0) {
            continue;
          }
          for (NetlinkMessage m : NetlinkMessage.parse(receive, len)) {
            if (m.seq() != seq) {
              continue;
            }
            if (m.type() == NLMSG_ERROR && m.errorCode() != 0) {
              throw NetlinkException.fromErrno(m.errorCode(), "ip route get " + describe(q), thread.describe(),
                  m.extendedAckMessage());
            }
            if (m.type() == RTM_NEWROUTE) {
              return decode(m.payload());
            }
          }
        }
        throw new NetlinkException(0, "ip route get " + describe(q) + " in " + thread.describe() + ": no answer");
      }
    });
  }

  static void encode(NetlinkMessageWriter w, int seq, Lookup q) {
    IpFamily f = q.destination().family();
    w.begin(RTM_GETROUTE, NLM_F_REQUEST, seq);
    w.u8(f.addressFamily()).u8(f.bits()).u8(q.source().isPresent() ? f.bits() : 0).u8(0)
        .u8(0).u8(0).u8(0).u8(0).u32(RTM_F_LOOKUP_TABLE);
    w.attrBytes(RTA_DST, q.destination().addressBytes());
    q.source().ifPresent(s -> w.attrBytes(RTA_SRC, s.addressBytes()));
    q.inputInterface().ifPresent(i -> w.attrU32(RTA_IIF, i));
    if (q.mark() != 0) {
      w.attrU32(RTA_MARK, (int) q.mark());
    }
    w.end();
  }

  static Answer decode(ByteBuffer p) {
    IpFamily family = IpFamily.fromAddressFamily(Byte.toUnsignedInt(p.get(0)));
    NetlinkAttributes a = NetlinkAttributes.parse(p, RTMSG_LEN, p.limit());
    long table = Integer.toUnsignedLong(a.u32(RTA_TABLE).orElse(Byte.toUnsignedInt(p.get(4))));
    Optional<IpPrefix> gw = a.bytes(RTA_GATEWAY).filter(b -> b.length == family.byteLength()).map(IpPrefix::host);
    Optional<IpPrefix> src = a.bytes(RTA_PREFSRC).filter(b -> b.length == family.byteLength()).map(IpPrefix::host);
    return new Answer(family, table, RouteType.fromRtn(Byte.toUnsignedInt(p.get(7))), a.u32(RTA_OIF), gw, src);
  }

  private static String describe(Lookup q) {
    return q.destination().addressText() + q.source().map(s -> " from " + s.addressText()).orElse("")
        + (q.inputInterface().isPresent() ? " iif #" + q.inputInterface().getAsInt() : "")
        + (q.mark() != 0 ? " mark 0x" + Long.toHexString(q.mark()) : "");
  }
}

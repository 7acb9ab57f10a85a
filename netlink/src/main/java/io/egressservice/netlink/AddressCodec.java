package io.egressservice.netlink;

import static io.egressservice.netlink.NetlinkConstants.*;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.nio.ByteBuffer;
import java.util.Optional;

/**
 * {@link Address} from RTM_NEWADDR / RTM_DELADDR: {@code struct ifaddrmsg} (u8 family, u8 prefixlen,
 * u8 flags, u8 scope, u32 index) then IFA_* attributes. IPv4 puts the address in IFA_LOCAL (IFA_ADDRESS
 * is the peer on point-to-point links); IPv6 only in IFA_ADDRESS, unless a peer is given.
 */
final class AddressCodec {
  private AddressCodec() {}

  /** A dump of every address of every family ({@code AF_UNSPEC}): {@code ip addr show}. */
  static void encodeDump(NetlinkMessageWriter w, int seq) {
    w.begin(RTM_GETADDR, NLM_F_REQUEST | NLM_F_DUMP, seq);
    w.u8(0).u8(0).u8(0).u8(0).u32(0);
    w.end();
  }

  /** {@code ip addr add LOCAL/LEN scope S dev #INDEX} (RTM_NEWADDR, NLM_F_CREATE|NLM_F_EXCL). */
  static void encodeAdd(NetlinkMessageWriter w, int seq, Address a) {
    w.begin(RTM_NEWADDR, NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq);
    w.u8(a.family().addressFamily()).u8(a.prefixLength()).u8(0).u8(a.scope()).u32(a.index());
    w.attrBytes(IFA_LOCAL, a.local().addressBytes());
    w.attrBytes(IFA_ADDRESS, a.local().addressBytes());
    w.end();
  }

  /** Decodes a payload; empty for families other than IPv4 and IPv6. */
  static Optional<Address> decode(ByteBuffer p) {
    if (p.limit() < IFADDRMSG_LEN) {
      throw new IllegalArgumentException("short ifaddrmsg: " + p.limit() + " bytes");
    }
    int af = Byte.toUnsignedInt(p.get(0));
    if (af != IpFamily.V4.addressFamily() && af != IpFamily.V6.addressFamily()) {
      return Optional.empty();
    }
    IpFamily family = IpFamily.fromAddressFamily(af);
    int prefixLength = Byte.toUnsignedInt(p.get(1));
    int scope = Byte.toUnsignedInt(p.get(3));
    int index = p.getInt(4);
    NetlinkAttributes a = NetlinkAttributes.parse(p, IFADDRMSG_LEN, p.limit());
    Optional<byte[]> local = a.bytes(IFA_LOCAL).or(() -> a.bytes(IFA_ADDRESS))
        .filter(b -> b.length == family.byteLength());
    return local.map(b -> new Address(family, index, IpPrefix.host(b), prefixLength, scope));
  }
}

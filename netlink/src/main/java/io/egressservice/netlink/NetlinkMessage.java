package io.egressservice.netlink;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * One received netlink message: the {@code struct nlmsghdr} fields and its payload (a native-order
 * view, not a copy, valid until the receive buffer is reused).
 */
record NetlinkMessage(int type, int flags, int seq, int pid, ByteBuffer payload) {

  /**
   * Splits a datagram into messages. Stops at a truncated or malformed header instead of reading
   * past the end (a short buffer is an error of the sender, never a crash here).
   */
  static List<NetlinkMessage> parse(ByteBuffer buf, int length) {
    ByteBuffer b = buf.duplicate().order(ByteOrder.nativeOrder());
    List<NetlinkMessage> out = new ArrayList<>();
    int offset = 0;
    while (offset + NetlinkConstants.NLMSG_HDRLEN <= length) {
      int len = b.getInt(offset);
      if (len < NetlinkConstants.NLMSG_HDRLEN || offset + len > length) {
        throw new IllegalArgumentException(
            "malformed netlink message at offset " + offset + ": length " + len + " of " + length);
      }
      int type = Short.toUnsignedInt(b.getShort(offset + 4));
      int flags = Short.toUnsignedInt(b.getShort(offset + 6));
      int seq = b.getInt(offset + 8);
      int pid = b.getInt(offset + 12);
      ByteBuffer payload =
          b.slice(offset + NetlinkConstants.NLMSG_HDRLEN, len - NetlinkConstants.NLMSG_HDRLEN)
              .order(ByteOrder.nativeOrder());
      out.add(new NetlinkMessage(type, flags, seq, pid, payload));
      offset += NetlinkMessageWriter.align(len);
    }
    return out;
  }

  /** For NLMSG_ERROR: the errno, positive (0 is an ACK). */
  int errorCode() {
    return -payload.getInt(0);
  }

  /** For NLMSG_ERROR: the extended-ack text of the kernel (NLMSGERR_ATTR_MSG), or empty. */
  String extendedAckMessage() {
    if ((flags & NetlinkConstants.NLM_F_ACK_TLVS) == 0 || payload.limit() < 4 + NetlinkConstants.NLMSG_HDRLEN) {
      return "";
    }
    int echoed =
        (flags & NetlinkConstants.NLM_F_CAPPED) != 0
            ? NetlinkConstants.NLMSG_HDRLEN
            : NetlinkMessageWriter.align(payload.getInt(4));
    int start = 4 + echoed;
    if (start >= payload.limit()) {
      return "";
    }
    NetlinkAttributes tlvs = NetlinkAttributes.parse(payload, start, payload.limit());
    return tlvs.string(NetlinkConstants.NLMSGERR_ATTR_MSG).orElse("");
  }
}

package io.egressservice.netlink;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * Appends netlink messages to a buffer: a {@code struct nlmsghdr}, a fixed family header and
 * {@code struct nlattr} attributes, each padded to 4 bytes (NLMSG_ALIGN / NLA_ALIGN). Several
 * messages can be appended back to back, which is how a batch goes out in one {@code send}.
 *
 * <p>Everything is in host byte order, as netlink requires (the buffer is set to native order).
 * Knows nothing about rules or routes.
 */
final class NetlinkMessageWriter {
  private final ByteBuffer buf;
  private int messageStart = -1;

  NetlinkMessageWriter(ByteBuffer buf) {
    this.buf = buf.order(ByteOrder.nativeOrder());
  }

  static int align(int length) {
    return (length + 3) & ~3;
  }

  ByteBuffer buffer() {
    return buf;
  }

  /** Bytes written so far (all complete messages plus the one being written). */
  int position() {
    return buf.position();
  }

  int remaining() {
    return buf.remaining();
  }

  void clear() {
    buf.clear();
    messageStart = -1;
  }

  /** Starts a message; its length is filled in by {@link #end()}. */
  NetlinkMessageWriter begin(int type, int flags, int seq) {
    if (messageStart >= 0) {
      throw new IllegalStateException("message not ended");
    }
    messageStart = buf.position();
    buf.putInt(0).putShort((short) type).putShort((short) flags).putInt(seq).putInt(0);
    return this;
  }

  NetlinkMessageWriter u8(int v) {
    buf.put((byte) v);
    return this;
  }

  NetlinkMessageWriter u16(int v) {
    buf.putShort((short) v);
    return this;
  }

  NetlinkMessageWriter u32(int v) {
    buf.putInt(v);
    return this;
  }

  private void pad() {
    while ((buf.position() & 3) != 0) {
      buf.put((byte) 0);
    }
  }

  private void attrHeader(int type, int payloadLength) {
    pad();
    buf.putShort((short) (NetlinkConstants.NLA_HDRLEN + payloadLength)).putShort((short) type);
  }

  NetlinkMessageWriter attrU8(int type, int v) {
    attrHeader(type, 1);
    buf.put((byte) v);
    return this;
  }

  /** A u16 in host order (NLA_U16). */
  NetlinkMessageWriter attrU16(int type, int v) {
    attrHeader(type, 2);
    buf.putShort((short) v);
    return this;
  }

  /** A u16 in network order (a __be16 such as a UDP port). */
  NetlinkMessageWriter attrBe16(int type, int v) {
    return attrBytes(type, new byte[] {(byte) (v >>> 8), (byte) v});
  }

  /** A u64 in network order (a __be64 such as a tunnel id). */
  NetlinkMessageWriter attrBe64(int type, long v) {
    byte[] b = new byte[8];
    for (int i = 0; i < 8; i++) {
      b[i] = (byte) (v >>> (56 - 8 * i));
    }
    return attrBytes(type, b);
  }

  /** A flag attribute (NLA_FLAG): present, no payload. */
  NetlinkMessageWriter attrFlag(int type) {
    attrHeader(type, 0);
    return this;
  }

  NetlinkMessageWriter attrU32(int type, int v) {
    attrHeader(type, 4);
    buf.putInt(v);
    return this;
  }

  NetlinkMessageWriter attrBytes(int type, byte[] v) {
    attrHeader(type, v.length);
    buf.put(v);
    return this;
  }

  /** A NUL-terminated string attribute (NLA_NUL_STRING / NLA_STRING as iproute2 sends them). */
  NetlinkMessageWriter attrString(int type, String v) {
    byte[] bytes = v.getBytes(StandardCharsets.UTF_8);
    attrHeader(type, bytes.length + 1);
    buf.put(bytes).put((byte) 0);
    return this;
  }

  /** Opens a nested attribute; close it with {@link #endNested(int)}. */
  int beginNested(int type) {
    pad();
    int start = buf.position();
    buf.putShort((short) 0).putShort((short) type);
    return start;
  }

  NetlinkMessageWriter endNested(int start) {
    buf.putShort(start, (short) (buf.position() - start));
    return this;
  }

  /** Pads the message to 4 bytes and writes its length (which includes the padding). */
  NetlinkMessageWriter end() {
    if (messageStart < 0) {
      throw new IllegalStateException("no message begun");
    }
    pad();
    buf.putInt(messageStart, buf.position() - messageStart);
    messageStart = -1;
    return this;
  }

  /** Drops a message begun but not ended (e.g. it did not fit). */
  void abandon() {
    if (messageStart >= 0) {
      buf.position(messageStart);
      messageStart = -1;
    }
  }

  /** A copy of what has been written, for tests and logging. */
  byte[] toByteArray() {
    byte[] out = new byte[buf.position()];
    buf.get(0, out);
    return out;
  }
}

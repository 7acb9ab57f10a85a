package io.egressservice.netlink;

import java.nio.ByteBuffer;

/**
 * The ctnetlink requests' and tuples' wire form as the kernel's {@code nla_put} writes it: each attribute padded
 * after itself, the padding counted in its nest's length ({@link NetlinkMessageWriter} pads before the next one,
 * which leaves a nest shorter by it), so that a tuple written here equals, byte for byte, the tuple the kernel dumps.
 */
final class ConntrackWire {
  private ConntrackWire() {}

  /** Writes the netlink header of the message that ends at {@code b}'s position; returns its length. */
  static int header(ByteBuffer b, int type, int flags, int seq) {
    int len = b.position();
    b.putInt(0, len);
    b.putShort(4, (short) type);
    b.putShort(6, (short) flags);
    b.putInt(8, seq);
    b.putInt(12, 0);
    return len;
  }

  /** Opens a nested attribute; {@link #end} closes it with the position this returns. */
  static int begin(ByteBuffer b, int type) {
    int start = b.position();
    b.putShort((short) 0);
    b.putShort((short) type);
    return start;
  }

  static void end(ByteBuffer b, int start) {
    b.putShort(start, (short) (b.position() - start));
  }

  /** One attribute, padded to 4 bytes. */
  static void attr(ByteBuffer b, int type, byte[] value) {
    b.putShort((short) (4 + value.length));
    b.putShort((short) type);
    b.put(value);
    while ((b.position() & 3) != 0) {
      b.put((byte) 0);
    }
  }
}

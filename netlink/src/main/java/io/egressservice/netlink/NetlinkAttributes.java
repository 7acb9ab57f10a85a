package io.egressservice.netlink;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;
import java.util.OptionalInt;

/**
 * The {@code struct nlattr} list of a message, indexed by type (the NLA_F_NESTED and
 * NLA_F_NET_BYTEORDER bits are masked off, as the kernel may or may not set them). A later attribute
 * of the same type wins, like {@code nla_parse}.
 */
final class NetlinkAttributes {
  private static final int MAX_TYPE = 64;
  /**
   * Where each type's payload starts, 0 for absent (a payload never starts at 0: its header comes
   * first); its length is read back from that header. One small array, grown to the highest type
   * present: a dump decodes one of these per rule, thousands per reconcile.
   */
  private int[] offset = new int[24];
  private final ByteBuffer buf;

  private NetlinkAttributes(ByteBuffer buf) {
    this.buf = buf;
  }

  /** Parses attributes between {@code start} and {@code end} of {@code buf}. */
  static NetlinkAttributes parse(ByteBuffer buf, int start, int end) {
    ByteBuffer b = buf.duplicate().order(ByteOrder.nativeOrder());
    NetlinkAttributes a = new NetlinkAttributes(b);
    int pos = start;
    while (pos + NetlinkConstants.NLA_HDRLEN <= end) {
      int len = Short.toUnsignedInt(b.getShort(pos));
      int type = Short.toUnsignedInt(b.getShort(pos + 2)) & NetlinkConstants.NLA_TYPE_MASK;
      if (len < NetlinkConstants.NLA_HDRLEN || pos + len > end) {
        throw new IllegalArgumentException("malformed attribute at offset " + pos + ": length " + len);
      }
      if (type < MAX_TYPE) {
        if (type >= a.offset.length) {
          a.offset = Arrays.copyOf(a.offset, MAX_TYPE);
        }
        a.offset[type] = pos + NetlinkConstants.NLA_HDRLEN;
      }
      pos += NetlinkMessageWriter.align(len);
    }
    return a;
  }

  /** Whether an attribute is present whose type is not among the bits of {@code types}. */
  boolean hasAnyBut(long types) {
    for (int t = 1; t < offset.length; t++) {
      if (offset[t] > 0 && (t >= 64 || (types & (1L << t)) == 0)) {
        return true;
      }
    }
    return false;
  }

  /** The types present that are not among the bits of {@code types}, ascending. */
  int[] typesBut(long types) {
    return java.util.stream.IntStream.range(1, offset.length)
        .filter(t -> offset[t] > 0 && (t >= 64 || (types & (1L << t)) == 0)).toArray();
  }

  private int length(int type) {
    return Short.toUnsignedInt(buf.getShort(offset[type] - NetlinkConstants.NLA_HDRLEN)) - NetlinkConstants.NLA_HDRLEN;
  }

  boolean has(int type) {
    return type < offset.length && offset[type] > 0;
  }

  private void need(int type, int bytes) {
    if (length(type) < bytes) {
      throw new IllegalArgumentException("attribute " + type + " has " + length(type) + " bytes, expected " + bytes);
    }
  }

  OptionalInt u8(int type) {
    if (!has(type)) {
      return OptionalInt.empty();
    }
    need(type, 1);
    return OptionalInt.of(Byte.toUnsignedInt(buf.get(offset[type])));
  }

  /** A u32 as a Java int (callers use Integer.toUnsignedLong where the full range matters). */
  OptionalInt u32(int type) {
    if (!has(type)) {
      return OptionalInt.empty();
    }
    need(type, 4);
    return OptionalInt.of(buf.getInt(offset[type]));
  }

  Optional<byte[]> bytes(int type) {
    if (!has(type)) {
      return Optional.empty();
    }
    byte[] out = new byte[length(type)];
    buf.get(offset[type], out);
    return Optional.of(out);
  }

  /** A string attribute without its terminating NUL (and anything after it). */
  Optional<String> string(int type) {
    return bytes(type)
        .map(
            b -> {
              int n = 0;
              while (n < b.length && b[n] != 0) {
                n++;
              }
              return new String(b, 0, n, StandardCharsets.UTF_8);
            });
  }

  /**
   * Each attribute of type {@code inner} nested inside attribute {@code type}, itself parsed as an attribute list:
   * a list such as NFTA_SET_ELEM_LIST_ELEMENTS repeats one type (NFTA_LIST_ELEM), of which the index keeps only
   * the last. Nothing happens when {@code type} is absent.
   */
  void forEachNested(int type, int inner, java.util.function.Consumer<NetlinkAttributes> each) {
    if (!has(type)) {
      return;
    }
    int end = offset[type] + length(type);
    int pos = offset[type];
    while (pos + NetlinkConstants.NLA_HDRLEN <= end) {
      int len = Short.toUnsignedInt(buf.getShort(pos));
      int t = Short.toUnsignedInt(buf.getShort(pos + 2)) & NetlinkConstants.NLA_TYPE_MASK;
      if (len < NetlinkConstants.NLA_HDRLEN || pos + len > end) {
        throw new IllegalArgumentException("malformed nested attribute at offset " + pos + ": length " + len);
      }
      if (t == inner) {
        each.accept(parse(buf, pos + NetlinkConstants.NLA_HDRLEN, pos + len));
      }
      pos += NetlinkMessageWriter.align(len);
    }
  }

  /** The attributes nested inside attribute {@code type}. */
  Optional<NetlinkAttributes> nested(int type) {
    if (!has(type)) {
      return Optional.empty();
    }
    return Optional.of(parse(buf, offset[type], offset[type] + length(type)));
  }
}

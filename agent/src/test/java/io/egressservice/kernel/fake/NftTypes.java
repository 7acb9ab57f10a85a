package io.egressservice.kernel.fake;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.math.BigInteger;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Optional;

/**
 * The nftables data types the fake holds in sets and maps: {@code ipv4_addr}, {@code ipv6_addr}, {@code ifname}
 * (keys; the addresses also as map values), {@code verdict} (map values). Keys are held as the kernel holds them,
 * in network-order bytes (an {@code ifname} NUL-padded to 16), and printed as libnftables-json prints them.
 */
final class NftTypes {
  private static final JsonNodeFactory F = JsonNodeFactory.instance;
  private static final int IFNAMSIZ = 16;

  private NftTypes() {}

  /** Refuses what the fake does not model, loudly: a test must not pass on a type it cannot check. */
  static void checkKeyType(String type) {
    if (!type.equals("ipv4_addr") && !type.equals("ipv6_addr") && !type.equals("ifname")) {
      throw new UnsupportedOperationException("the fake nftables does not model set key type '" + type + "'");
    }
  }

  static void checkDataType(String type) {
    if (!type.equals("ipv4_addr") && !type.equals("ipv6_addr") && !type.equals("verdict")) {
      throw new UnsupportedOperationException("the fake nftables does not model map data type '" + type + "'");
    }
  }

  /** One key of {@code type} from its text; empty when the text is not one. */
  static Optional<byte[]> key(String type, String text) {
    if (type.equals("ifname")) {
      byte[] name = text.getBytes(StandardCharsets.UTF_8);
      return name.length >= IFNAMSIZ ? Optional.empty() : Optional.of(Arrays.copyOf(name, IFNAMSIZ));
    }
    IpFamily family = type.equals("ipv4_addr") ? IpFamily.V4 : IpFamily.V6;
    return IpPrefix.tryParse(text).filter(p -> p.isHost() && p.family() == family).map(IpPrefix::addressBytes);
  }

  /** An element's key range: a single key, {@code {"prefix":...}} or {@code {"range":[a,b]}} (interval sets). */
  static Optional<byte[][]> range(String type, JsonNode val) {
    if (val.isTextual()) {
      return key(type, val.asText()).map(k -> new byte[][] {k, k});
    }
    if (type.equals("ifname")) {
      return Optional.empty();
    }
    if (val.has("prefix")) {
      Optional<IpPrefix> p = IpPrefix.tryParse(val.get("prefix").path("addr").asText() + "/"
          + val.get("prefix").path("len").asInt());
      return p.map(x -> new byte[][] {x.addressBytes(), bytes(x.lastAddress(), x.family().byteLength())});
    }
    if (val.has("range") && val.get("range").size() == 2) {
      Optional<byte[]> a = key(type, val.get("range").get(0).asText());
      Optional<byte[]> b = key(type, val.get("range").get(1).asText());
      return a.isPresent() && b.isPresent() ? Optional.of(new byte[][] {a.get(), b.get()}) : Optional.empty();
    }
    return Optional.empty();
  }

  /** The key as libnftables-json prints it; a range as one address, a prefix or a range. */
  static JsonNode print(String type, byte[] first, byte[] last) {
    if (type.equals("ifname")) {
      int n = 0;
      while (n < first.length && first[n] != 0) {
        n++;
      }
      return F.textNode(new String(first, 0, n, StandardCharsets.UTF_8));
    }
    if (Arrays.equals(first, last)) {
      return F.textNode(IpPrefix.host(first).addressText());
    }
    BigInteger a = new BigInteger(1, first);
    BigInteger size = new BigInteger(1, last).subtract(a).add(BigInteger.ONE);
    if (size.bitCount() == 1 && a.mod(size).signum() == 0) {
      ObjectNode p = F.objectNode();
      p.putObject("prefix").put("addr", IpPrefix.host(first).addressText())
          .put("len", first.length * 8 - (size.bitLength() - 1));
      return p;
    }
    ObjectNode r = F.objectNode();
    r.putArray("range").add(IpPrefix.host(first).addressText()).add(IpPrefix.host(last).addressText());
    return r;
  }

  /** The key one past {@code key} (an interval's end element), empty when {@code key} is the last of its space. */
  static Optional<byte[]> next(byte[] key) {
    BigInteger n = new BigInteger(1, key).add(BigInteger.ONE);
    return n.bitLength() > key.length * 8 ? Optional.empty() : Optional.of(bytes(n, key.length));
  }

  static int compare(byte[] a, byte[] b) {
    return Arrays.compareUnsigned(a, b);
  }

  private static byte[] bytes(BigInteger v, int length) {
    byte[] raw = v.toByteArray();
    byte[] out = new byte[length];
    int copy = Math.min(raw.length, length);
    System.arraycopy(raw, raw.length - copy, out, length - copy, copy);
    return out;
  }
}

package io.egressservice.netlink;

import java.util.HexFormat;

/** Hex strings with spaces, "|" separators and "#" comments to lay out recorded messages readably. */
final class Hex {
  private Hex() {}

  static byte[] bytes(String text) {
    StringBuilder sb = new StringBuilder();
    for (String line : text.split("\n")) {
      int hash = line.indexOf('#');
      sb.append(hash >= 0 ? line.substring(0, hash) : line);
    }
    return HexFormat.of().parseHex(sb.toString().replaceAll("[\\s|]", ""));
  }

  static String of(byte[] b) {
    return HexFormat.ofDelimiter(" ").formatHex(b);
  }
}

package io.egressservice.allocator;

import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The head of an answer to a health probe: its status and headers (names in lower case). A head that is not HTTP at
 * all is status 0.
 */
record ProbeAnswer(int status, Map<String, String> headers) {
  /** More than any agent's answer head: a longer one is somebody else's. */
  static final int MAX_HEAD = 4096;
  /** An answer that says nothing about whose it is. */
  static final ProbeAnswer NAMELESS = new ProbeAnswer(0, Map.of());

  ProbeAnswer {
    headers = Map.copyOf(headers);
  }

  Optional<String> header(String name) {
    return Optional.ofNullable(headers.get(name.toLowerCase(Locale.ROOT)));
  }

  /** The answer once {@code buf[0..n)} holds its whole head (up to the blank line), else empty. */
  static Optional<ProbeAnswer> parse(byte[] buf, int n) {
    int end = -1;
    for (int i = 0; i + 1 < n; i++) {
      if (buf[i] == '\n' && (buf[i + 1] == '\n' || (buf[i + 1] == '\r' && i + 2 < n && buf[i + 2] == '\n'))) {
        end = i;
        break;
      }
    }
    if (end < 0) {
      return Optional.empty();
    }
    String[] lines = new String(buf, 0, end, StandardCharsets.ISO_8859_1).split("\r?\n");
    String first = lines[0];
    int status = 0;
    if (first.startsWith("HTTP/1.") && first.length() >= 12 && first.charAt(8) == ' ') {
      try {
        status = Integer.parseInt(first.substring(9, 12));
      } catch (NumberFormatException e) {
        status = 0;
      }
    }
    Map<String, String> headers = new HashMap<>();
    for (int i = 1; i < lines.length; i++) {
      int colon = lines[i].indexOf(':');
      if (colon > 0) {
        headers.putIfAbsent(lines[i].substring(0, colon).trim().toLowerCase(Locale.ROOT),
            lines[i].substring(colon + 1).trim());
      }
    }
    return Optional.of(new ProbeAnswer(status, headers));
  }
}

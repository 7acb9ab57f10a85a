package io.egressservice.text;

import java.io.PrintWriter;

/**
 * Text for people, with every character that could change what they see shown as a visible escape instead: a
 * newline cannot start a forged line (of a log, an Event, a plan's comment), an ANSI escape cannot recolour, hide or
 * overwrite what is printed, a bidirectional override cannot reorder it. What is escaped:
 *
 * <ul>
 *   <li>{@code \} as {@code \\}, so no escape below can be written literally and passed off as one;
 *   <li>newline, carriage return and tab as {@code \n}, {@code \r}, {@code \t};
 *   <li>every other C0 control, DEL and every C1 control as {@code \xHH} (ESC is {@code \x1b}: an ANSI sequence keeps
 *       its printable rest, but without ESC, or the C1 CSI {@code \x9b}, no terminal reads it as one);
 *   <li>the line and paragraph separators U+2028 and U+2029, the bidirectional embeddings, overrides and isolates
 *       U+202A..U+202E and U+2066..U+2069, the marks U+061C, U+200E and U+200F, and a surrogate without its pair
 *       (not text at all), as {@code \}{@code uHHHH}.
 * </ul>
 *
 * Everything else, any printable character of any script, is kept: a plain value is returned unchanged (the same
 * String). {@link #unescape} reverses {@link #escape} exactly.
 */
public final class Printable {
  private static final char[] HEX = "0123456789abcdef".toCharArray();

  private Printable() {}

  /**
   * {@code text} with every character that is not plainly printable escaped; {@code text} itself when it has none.
   * The one method for a string someone else wrote, on its way into a message, an Event, a log line or text output.
   */
  public static String escape(String text) {
    int first = firstToEscape(text);
    if (first < 0) {
      return text;
    }
    StringBuilder sb = new StringBuilder(text.length() + 16).append(text, 0, first);
    for (int i = first; i < text.length(); i++) {
      char c = text.charAt(i);
      if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
        sb.append(c).append(text.charAt(++i)); // a pair: a printable character beyond the BMP
      } else {
        appendEscaped(sb, c);
      }
    }
    return sb.toString();
  }

  /** {@link #escape} of {@code value}'s {@code toString()} ({@code "null"} for null). */
  public static String escape(Object value) {
    return escape(String.valueOf(value));
  }

  /** Whether {@link #escape} keeps {@code text} as it is. */
  public static boolean isPlain(String text) {
    return firstToEscape(text) < 0;
  }

  /** Whether {@link #escape} writes {@code c} as an escape (a surrogate: unless it is half of a pair). */
  public static boolean escapes(char c) {
    return needsEscape(c);
  }

  /** Prints {@code line} escaped, then a line end: each call is exactly one line, whatever {@code line} holds. */
  public static void println(PrintWriter out, String line) {
    out.println(escape(line));
  }

  /**
   * What {@link #escape} was given, from what it returned. A backslash that starts no escape of {@link #escape}'s
   * (text that was never escaped) is kept as it is.
   */
  public static String unescape(String escaped) {
    int first = escaped.indexOf('\\');
    if (first < 0) {
      return escaped;
    }
    StringBuilder sb = new StringBuilder(escaped.length()).append(escaped, 0, first);
    for (int i = first; i < escaped.length(); i++) {
      char c = escaped.charAt(i);
      if (c != '\\' || i + 1 >= escaped.length()) {
        sb.append(c);
        continue;
      }
      char k = escaped.charAt(i + 1);
      int hexDigits = k == 'x' ? 2 : k == 'u' ? 4 : 0;
      if (k == '\\' || k == 'n' || k == 'r' || k == 't') {
        sb.append(k == 'n' ? '\n' : k == 'r' ? '\r' : k == 't' ? '\t' : '\\');
        i++;
      } else if (hexDigits > 0 && isHex(escaped, i + 2, hexDigits)) {
        sb.append((char) Integer.parseInt(escaped, i + 2, i + 2 + hexDigits, 16));
        i += 1 + hexDigits;
      } else {
        sb.append(c);
      }
    }
    return sb.toString();
  }

  private static boolean isHex(String s, int from, int count) {
    if (from + count > s.length()) {
      return false;
    }
    for (int i = from; i < from + count; i++) {
      if (Character.digit(s.charAt(i), 16) < 0) {
        return false;
      }
    }
    return true;
  }

  private static int firstToEscape(String text) {
    for (int i = 0; i < text.length(); i++) {
      char c = text.charAt(i);
      if (c >= 0x20 && c < 0x7f && c != '\\') {
        continue; // printable ASCII: the common case, decided at once
      }
      if (Character.isHighSurrogate(c) && i + 1 < text.length() && Character.isLowSurrogate(text.charAt(i + 1))) {
        i++;
        continue;
      }
      if (needsEscape(c)) {
        return i;
      }
    }
    return -1;
  }

  private static boolean needsEscape(char c) {
    return c == '\\' || c < 0x20 || (c >= 0x7f && c <= 0x9f) || c == 0x2028 || c == 0x2029
        || (c >= 0x202a && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069) || c == 0x061c || c == 0x200e || c == 0x200f
        || Character.isSurrogate(c);
  }

  private static void appendEscaped(StringBuilder sb, char c) {
    if (!needsEscape(c)) {
      sb.append(c);
    } else if (c == '\\') {
      sb.append("\\\\");
    } else if (c == '\n') {
      sb.append("\\n");
    } else if (c == '\r') {
      sb.append("\\r");
    } else if (c == '\t') {
      sb.append("\\t");
    } else if (c <= 0xff) {
      sb.append("\\x").append(HEX[c >> 4]).append(HEX[c & 0xf]);
    } else {
      sb.append("\\u").append(HEX[c >> 12]).append(HEX[(c >> 8) & 0xf]).append(HEX[(c >> 4) & 0xf]).append(HEX[c & 0xf]);
    }
  }
}

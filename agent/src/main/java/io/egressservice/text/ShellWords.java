package io.egressservice.text;

import java.util.regex.Pattern;

/**
 * Words of a POSIX shell command line that a person may paste: a value is one word, whatever it holds, and means
 * itself. A value made only of characters no shell treats specially stays bare ({@code 100}, {@code vrf-blue},
 * {@code 10.0.0.5/32}), so plain output reads as before; any other is put in single quotes, inside which a shell
 * expands nothing, a quote of its own written {@code '\''}.
 */
public final class ShellWords {
  /** Characters that are literal in every position of a word that is not a command's first (POSIX sh, bash, zsh). */
  private static final Pattern BARE = Pattern.compile("[A-Za-z0-9_@%+=:,./-]+");

  private ShellWords() {}

  /** {@code value} as one shell word that means exactly {@code value}. */
  public static String quote(String value) {
    if (BARE.matcher(value).matches()) {
      return value;
    }
    return "'" + value.replace("'", "'\\''") + "'";
  }

  /**
   * {@code value} as one shell word a person can read on a terminal: {@link #quote} of the value itself unless it
   * holds a character {@link Printable} escapes (a backslash alone is literal in single quotes, and kept), else of
   * its {@linkplain Printable#escape escaped} form. A value with a control character is then shown, and passed, as
   * its visible escapes: still one word, never a second command, never a hidden one. (Such a value names no routing
   * table or device a node can have.)
   */
  public static String visibleWord(String value) {
    return quote(Printable.isPlain(value.replace("\\", "")) ? value : Printable.escape(value));
  }
}

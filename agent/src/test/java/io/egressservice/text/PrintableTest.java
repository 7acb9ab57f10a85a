package io.egressservice.text;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.List;
import org.junit.jupiter.api.Test;

class PrintableTest {
  @Test
  void plainValuesAreReturnedAsTheyAre() {
    for (String plain : List.of("", "shop/web", "100", "vrf-blue", "10.128.0.5/32", "network 'x' is not found: ok",
        "Grüße, 東京, emoji \uD83D\uDE00", "tab-free \"quotes\" and 'apostrophes'")) {
      assertThat(Printable.escape(plain)).isSameAs(plain);
      assertThat(Printable.isPlain(plain)).isTrue();
    }
  }

  @Test
  void lineBreaksAndTabsBecomeTheirCEscapes() {
    assertThat(Printable.escape("evil\ntouch /tmp/PWNED #")).isEqualTo("evil\\ntouch /tmp/PWNED #");
    assertThat(Printable.escape("a\r\nb\tc")).isEqualTo("a\\r\\nb\\tc");
  }

  @Test
  void otherC0ControlsDelAndC1ControlsBecomeHexEscapes() {
    assertThat(Printable.escape("\u0000\u0007\u0008\u000b\u000c\u001f")).isEqualTo("\\x00\\x07\\x08\\x0b\\x0c\\x1f");
    assertThat(Printable.escape("a\u007fb")).isEqualTo("a\\x7fb");
    assertThat(Printable.escape("\u0080\u0085\u009b\u009f")).isEqualTo("\\x80\\x85\\x9b\\x9f");
  }

  @Test
  void ansiEscapeSequencesLoseTheirEscapeAndShowTheirRest() {
    // conceal, then colour, then the 8-bit CSI: none of them reaches a terminal as a sequence
    assertThat(Printable.escape("100\u001b[8m hidden\u001b[0m")).isEqualTo("100\\x1b[8m hidden\\x1b[0m");
    assertThat(Printable.escape("\u001b]0;title\u0007")).isEqualTo("\\x1b]0;title\\x07");
    assertThat(Printable.escape("\u009b2J")).isEqualTo("\\x9b2J");
  }

  @Test
  void lineSeparatorsAndBidiControlsBecomeUnicodeEscapes() {
    assertThat(Printable.escape("a\u2028b\u2029c")).isEqualTo("a\\u2028b\\u2029c");
    assertThat(Printable.escape("\u202a\u202b\u202c\u202d\u202e")).isEqualTo("\\u202a\\u202b\\u202c\\u202d\\u202e");
    assertThat(Printable.escape("\u2066\u2067\u2068\u2069")).isEqualTo("\\u2066\\u2067\\u2068\\u2069");
    assertThat(Printable.escape("\u061c\u200e\u200f")).isEqualTo("\\u061c\\u200e\\u200f");
    // "web" + RLO + "txt.exe" shows as "webexe.txt": escaped it shows what it is
    assertThat(Printable.escape("web\u202etxt.exe")).isEqualTo("web\\u202etxt.exe");
  }

  @Test
  void aSurrogateWithoutItsPairIsEscapedAndAPairIsKept() {
    assertThat(Printable.escape("a\uD83Db")).isEqualTo("a\\ud83db");
    assertThat(Printable.escape("\uDE00")).isEqualTo("\\ude00");
    assertThat(Printable.escape("\n\uD83D\uDE00")).isEqualTo("\\n\uD83D\uDE00");
  }

  @Test
  void aBackslashIsEscapedSoNoEscapeCanBeFaked() {
    // written literally, "\n" is two characters; escaped it cannot be read as the escape of a newline
    assertThat(Printable.escape("a\\nb")).isEqualTo("a\\\\nb");
    assertThat(Printable.escape("a\\nb")).isNotEqualTo(Printable.escape("a\nb"));
    assertThat(Printable.isPlain("a\\b")).isFalse();
  }

  @Test
  void unescapeGivesBackWhatEscapeWasGiven() {
    for (String s : List.of("", "plain", "evil\ntouch /tmp/PWNED #", "a\\nb", "\\", "\\\\x1b", "\u001b[8m\u009b\u007f",
        "\u0000\u202e\u2066\u2028", "a\uD83Db\uDE00", "\uD83D\uDE00\r\t", "ends in \\")) {
      assertThat(Printable.unescape(Printable.escape(s))).as("round trip of %s", Printable.escape(s)).isEqualTo(s);
    }
  }

  @Test
  void unescapeKeepsABackslashThatStartsNoEscape() {
    assertThat(Printable.unescape("C:\\dir \\q \\x4 \\u12")).isEqualTo("C:\\dir \\q \\x4 \\u12");
    assertThat(Printable.unescape("raw\nline")).isEqualTo("raw\nline");
  }

  @Test
  void printlnWritesExactlyOneLineWhateverTheTextHolds() {
    StringWriter out = new StringWriter();
    Printable.println(new PrintWriter(out, true), "note: evil\n2026-12-07T00:00:00Z ERROR forged");
    assertThat(out.toString().lines()).containsExactly("note: evil\\n2026-12-07T00:00:00Z ERROR forged");
  }

  @Test
  void everyCharacterItEscapesIsSaidToBeEscaped() {
    for (char c = 0; c < 0xffff; c++) {
      String one = String.valueOf(c);
      boolean escaped = !Printable.escape(one).equals(one);
      assertThat(Printable.escapes(c)).as("U+%04X", (int) c).isEqualTo(escaped);
      assertThat(Printable.escape(one)).as("U+%04X", (int) c).matches(escaped ? "\\\\[\\\\nrtxu][0-9a-f]*" : ".");
    }
  }
}

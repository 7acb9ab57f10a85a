package io.egressservice.text;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class ShellWordsTest {
  /** What {@code sh} makes of {@code words}: the arguments it passes, NUL-separated, read back. */
  static List<String> argumentsSeenBySh(String words) throws IOException, InterruptedException {
    Process p = new ProcessBuilder("sh", "-c", "printf '%s\\0' " + words).redirectErrorStream(true).start();
    p.getOutputStream().close();
    assertThat(p.waitFor(10, TimeUnit.SECONDS)).isTrue();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.exitValue()).as(out).isZero();
    return List.of(out.split("\0", -1)).subList(0, (int) out.chars().filter(c -> c == 0).count());
  }

  @Test
  void plainValuesStayBare() {
    for (String v : List.of("100", "vrf-blue", "blue_vrf.1", "10.128.0.5/32", "fd01::5", "a,b", "x=y", "@%+:")) {
      assertThat(ShellWords.quote(v)).isSameAs(v);
      assertThat(ShellWords.visibleWord(v)).isSameAs(v);
    }
  }

  @Test
  void everyValueIsOneWordThatMeansItselfToSh() throws Exception {
    List<String> values = List.of("", "it's", "evil\ntouch /tmp/PWNED #", "$(touch x)", "`id`", "a b", "a;b", "a|b",
        "*", "~", "!x", "\\", "'", "''", "\"", "${HOME}", "a\u001b[8mb", "#", "x'; touch y; '");
    for (String v : values) {
      assertThat(argumentsSeenBySh(ShellWords.quote(v))).as("quote(%s)", Printable.escape(v)).containsExactly(v);
    }
    // many at once: no quote of one ends in another
    assertThat(argumentsSeenBySh(String.join(" ", values.stream().map(ShellWords::quote).toList())))
        .containsExactlyElementsOf(values);
  }

  @Test
  void aQuoteInAValueIsWrittenAsQuoteBackslashQuoteQuote() {
    assertThat(ShellWords.quote("it's")).isEqualTo("'it'\\''s'");
    assertThat(ShellWords.quote("")).isEqualTo("''");
  }

  @Test
  void aVisibleWordShowsControlCharactersAsEscapesInOneWord() throws Exception {
    assertThat(ShellWords.visibleWord("evil\ntouch /tmp/PWNED #")).isEqualTo("'evil\\ntouch /tmp/PWNED #'");
    assertThat(ShellWords.visibleWord("x\u001b[8my")).isEqualTo("'x\\x1b[8my'");
    assertThat(argumentsSeenBySh(ShellWords.visibleWord("evil\ntouch /tmp/PWNED #")))
        .containsExactly("evil\\ntouch /tmp/PWNED #");
    // without a control character it is the exact value, a backslash included
    assertThat(ShellWords.visibleWord("a\\b'c")).isEqualTo(ShellWords.quote("a\\b'c"));
  }
}

package io.egressservice.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.status.NopStatusListener;
import io.egressservice.logging.LogConfigurator.Format;
import io.egressservice.logging.LogConfigurator.Settings;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The programmatic logging configuration: the variables' values, what reaches stderr, and that a bad
 * value falls back to the default with one visible warning rather than silencing the agent.
 */
class LogConfiguratorTest {
  static Settings settings(Map<String, String> env) {
    return LogConfigurator.settings(name -> Optional.ofNullable(env.get(name)));
  }

  @Test
  void defaultsAreInfoAndText() {
    assertThat(settings(Map.of())).isEqualTo(new Settings(Level.INFO, Format.TEXT, List.of()));
    // empty or blank is the default too, without a warning
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "", "EGRESS_AGENT_LOG_FORMAT", "  ")))
        .isEqualTo(new Settings(Level.INFO, Format.TEXT, List.of()));
  }

  @Test
  void levelIgnoresCaseAndSurroundingBlanks() {
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "debug"))).isEqualTo(new Settings(Level.DEBUG, Format.TEXT));
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", " WARN\t"))).isEqualTo(new Settings(Level.WARN, Format.TEXT));
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "Trace")).agentLevel()).isEqualTo(Level.TRACE);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "error")).agentLevel()).isEqualTo(Level.ERROR);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "off")).agentLevel()).isEqualTo(Level.OFF);
  }

  @Test
  void anUnknownLevelIsInfoWithAWarning() {
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "verbose"))).isEqualTo(new Settings(Level.INFO, Format.TEXT,
        List.of("EGRESS_AGENT_LOG_LEVEL=\"verbose\" is not one of trace, debug, info, warn, error, off"
            + " (case and surrounding blanks do not matter); using info")));
    // logback's words for "inherit the parent's level" are no longer special
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "inherited")).agentLevel()).isEqualTo(Level.INFO);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "NULL")).warnings()).hasSize(1);
  }

  @Test
  void formatIgnoresCaseAndSurroundingBlanks() {
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "json"))).isEqualTo(new Settings(Level.INFO, Format.JSON));
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "JSON"))).isEqualTo(new Settings(Level.INFO, Format.JSON));
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", " json\n"))).isEqualTo(new Settings(Level.INFO, Format.JSON));
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "Text"))).isEqualTo(new Settings(Level.INFO, Format.TEXT));
  }

  @Test
  void anUnknownFormatIsTextWithAWarningQuotingTheValue() {
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", " yaml"))).isEqualTo(new Settings(Level.INFO, Format.TEXT,
        List.of("EGRESS_AGENT_LOG_FORMAT=\" yaml\" is not one of text, json"
            + " (case and surrounding blanks do not matter); using text")));
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "yaml", "EGRESS_AGENT_LOG_LEVEL", "loud")).warnings())
        .hasSize(2).anySatisfy(w -> assertThat(w).startsWith("EGRESS_AGENT_LOG_FORMAT=\"yaml\""))
        .anySatisfy(w -> assertThat(w).startsWith("EGRESS_AGENT_LOG_LEVEL=\"loud\""));
  }

  @Test
  void withAnUnknownFormatTheLogsStillAppearAfterOneWarning() {
    String err = stderrOf(() -> {
      LoggerContext context = new LoggerContext();
      context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter()); // as logback's start-up sets
      LogConfigurator.apply(context, settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "yaml")));
      var log = context.getLogger("io.egressservice.controller.NodeAgent");
      log.info("first");
      log.info("second");
    });
    List<String> lines = err.lines().toList();
    assertThat(lines).hasSize(3);
    assertThat(lines.get(0)).contains(" WARN ", "i.e.logging.LogConfigurator",
        "EGRESS_AGENT_LOG_FORMAT=\"yaml\" is not one of text, json", "using text");
    assertThat(lines.get(1)).contains(" INFO ", "NodeAgent - first");
    assertThat(lines.get(2)).contains(" INFO ", "NodeAgent - second");
    assertThat(err).containsOnlyOnce("EGRESS_AGENT_LOG_FORMAT");
  }

  @Test
  void anUnknownLevelIsWarnedAboutInTheChosenFormat() {
    String err = stderrOf(() -> {
      LoggerContext context = new LoggerContext();
      context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter()); // JSON lines carry the MDC
      LogConfigurator.apply(context, settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "Json", "EGRESS_AGENT_LOG_LEVEL", "bogus")));
      var log = context.getLogger("io.egressservice.X");
      log.debug("hidden: an unknown level is info, no longer debug");
      log.info("shown");
    });
    List<String> lines = err.lines().toList();
    assertThat(lines).hasSize(2);
    assertThat(lines.get(0)).startsWith("{").contains("\"level\":\"WARN\"",
        "\"loggerName\":\"io.egressservice.logging.LogConfigurator\"",
        "EGRESS_AGENT_LOG_LEVEL=\\\"bogus\\\" is not one of trace, debug, info, warn, error, off");
    assertThat(lines.get(1)).startsWith("{").contains("\"message\":\"shown\"");
  }

  /** What {@code run} writes to stderr (where the console appenders write, looking System.err up on each write). */
  private static String stderrOf(Runnable run) {
    PrintStream original = System.err;
    var captured = new ByteArrayOutputStream();
    System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
    try {
      run.run();
    } finally {
      System.setErr(original);
    }
    return captured.toString(StandardCharsets.UTF_8);
  }

  @Test
  void fabric8sRetryWarningsWithTheirStackTracesShowOnlyAtDebug() {
    String reflector = "io.fabric8.kubernetes.client.informers.impl.cache.Reflector";
    LoggerContext info = new LoggerContext();
    LogConfigurator.apply(info, new Settings(Level.INFO, Format.TEXT));
    assertThat(info.getLogger(reflector).isWarnEnabled()).as("a failed list/watch retried").isFalse();
    assertThat(info.getLogger(reflector).isErrorEnabled()).as("an informer that stops").isTrue();
    LoggerContext debug = new LoggerContext();
    LogConfigurator.apply(debug, new Settings(Level.DEBUG, Format.TEXT));
    assertThat(debug.getLogger(reflector).isDebugEnabled()).isTrue();
  }

  @Test
  void textGoesToStderrWithThePattern() {
    LoggerContext context = new LoggerContext();
    LogConfigurator.apply(context, new Settings(Level.INFO, Format.TEXT));
    var root = context.getLogger("ROOT");
    assertThat(root.getLevel()).isEqualTo(Level.WARN);
    assertThat(context.getLogger("io.fabric8").getLevel()).isEqualTo(Level.WARN);
    assertThat(context.getLogger("io.egressservice").getLevel()).isEqualTo(Level.INFO);
    assertThat(context.getLogger("io.egressservice.controller.NodeAgent").isInfoEnabled()).isTrue();
    assertThat(context.getLogger("io.fabric8.kubernetes.client.Foo").isInfoEnabled()).isFalse();
    assertThat(context.getStatusManager().getCopyOfStatusListenerList()).hasAtLeastOneElementOfType(NopStatusListener.class);
    var appender = (ConsoleAppender<?>) root.getAppender("text");
    assertThat(appender.isStarted()).isTrue();
    assertThat(appender.getTarget()).isEqualTo("System.err");
    var encoder = (TextLineEncoder) appender.getEncoder();
    assertThat(encoder.getPattern()).isEqualTo(
        "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %-5level [%thread] %logger{36} - %msg%n%ex");
    var event = new LoggingEvent("x", context.getLogger("io.egressservice.controller.NodeAgent"), Level.INFO,
        "reconcile ({}): {} change(s)", null, new Object[] {"api", 3});
    assertThat(new String(encoder.encode(event), StandardCharsets.UTF_8))
        .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d) INFO  \\[[^]]+\\] "
            + "i\\.egressservice\\.controller\\.NodeAgent - reconcile \\(api\\): 3 change\\(s\\)\\R");
  }

  @Test
  void jsonHasTheFormattedMessageAndAnRfc3339TimeNotTheTemplateArgumentsAndEpochMillis() {
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter()); // JSON lines carry the MDC
    LogConfigurator.apply(context, new Settings(Level.DEBUG, Format.JSON));
    var appender = (ConsoleAppender<?>) context.getLogger("ROOT").getAppender("json");
    assertThat(appender.getTarget()).isEqualTo("System.err");
    var encoder = (JsonLineEncoder) appender.getEncoder();
    var event = new LoggingEvent("x", context.getLogger("io.egressservice.X"), Level.WARN, "hello {} \"{}\"", null,
        new Object[] {1, "a\nb"});
    event.setTimeStamp(1_700_000_000_123L);
    String line = new String(encoder.encode(event), StandardCharsets.UTF_8);
    assertThat(line).isEqualTo("{\"time\":\"2023-11-14T22:13:20.123Z\",\"level\":\"WARN\","
        + "\"loggerName\":\"io.egressservice.X\",\"threadName\":" + JSON_STRING.apply(event.getThreadName())
        + ",\"message\":\"hello 1 \\\"a\\nb\\\"\"}\n");
    assertThat(context.getLogger("io.egressservice").getLevel()).isEqualTo(Level.DEBUG);
  }

  /** A text line the agent logs quotes what others wrote: escaped, each event stays its own line(s). */
  @Test
  void textLinesEscapeControlCharactersInTheMessageAndInExceptionMessages() {
    LoggerContext context = new LoggerContext();
    LogConfigurator.apply(context, new Settings(Level.INFO, Format.TEXT));
    var encoder = (TextLineEncoder) ((ConsoleAppender<?>) context.getLogger("ROOT").getAppender("text")).getEncoder();
    var logger = context.getLogger("io.egressservice.controller.NodeAgent");
    var forged = new LoggingEvent("x", logger, Level.INFO, "EgressService {}: network '{}' not found", null,
        new Object[] {"shop/web", "evil\n2026-12-07T10:00:00.000Z ERROR [main] i.e.c.NodeAgent - forged\u001b[8m"});

    String line = new String(encoder.encode(forged), StandardCharsets.UTF_8);

    assertThat(line).hasLineCount(1).doesNotContain("\u001b").endsWith(
        " - EgressService shop/web: network 'evil\\n2026-12-07T10:00:00.000Z ERROR [main] i.e.c.NodeAgent - forged"
            + "\\x1b[8m' not found" + System.lineSeparator());

    var failed = new LoggingEvent("x", logger, Level.WARN, "could not write Event", new IllegalStateException(
        "events \"web.1\u202e\" is forbidden\nforged line", new RuntimeException("cause\u009b2J")), null);
    List<String> trace = new String(encoder.encode(failed), StandardCharsets.UTF_8).lines().toList();
    assertThat(trace.get(0)).endsWith(" - could not write Event");
    assertThat(trace.get(1)).isEqualTo(
        "java.lang.IllegalStateException: events \"web.1\\u202e\" is forbidden\\nforged line");
    assertThat(trace).contains("Caused by: java.lang.RuntimeException: cause\\x9b2J")
        .noneMatch(l -> l.startsWith("forged line"))
        .allMatch(l -> l.chars().noneMatch(c -> c < 0x20 && c != '\t' || c == 0x202e || c == 0x9b));
  }

  @Test
  void jsonLinesAlsoEscapeDelC1AndBidiControls() throws Exception {
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter());
    var event = new LoggingEvent("x", context.getLogger("io.egressservice.X"), Level.WARN, "network '{}'", null,
        new Object[] {"a\nb\u001b[8m\u007f\u009b\u202e\u2028c"});

    String line = new String(new JsonLineEncoder().encode(event), StandardCharsets.UTF_8);

    assertThat(line).hasLineCount(1).contains("\"message\":\"network 'a\\nb\\u001b[8m\\u007f\\u009b\\u202e\\u2028c'\"");
    assertThat(new com.fasterxml.jackson.databind.ObjectMapper().readTree(line).path("message").asText())
        .isEqualTo("network 'a\nb\u001b[8m\u007f\u009b\u202e\u2028c'");
  }

  /**
   * Every control but newline, return and tab as a lower-case {@code \}{@code u00hh}, as the format has always
   * written them (not JSON's {@code \b} and {@code \f}), and characters beyond the BMP as themselves in UTF-8.
   */
  @Test
  void jsonLinesWriteOtherControlsAsLowerCaseUnicodeEscapesAndEmojiAsUtf8() {
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter());
    var event = new LoggingEvent("x", context.getLogger("io.egressservice.X"), Level.WARN, "network '{}'", null,
        new Object[] {"\b\f\u0000\u001f\t\u00e9\ud83d\ude00"});

    byte[] line = new JsonLineEncoder().encode(event);

    assertThat(new String(line, StandardCharsets.UTF_8))
        .contains("\"message\":\"network '\\u0008\\u000c\\u0000\\u001f\\t\u00e9\ud83d\ude00'\"");
    assertThat(line).containsSequence(0xf0, 0x9f, 0x98, 0x80);
  }

  @Test
  void jsonCarriesTheStackTraceAsOneString() throws Exception {
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter());
    var event = new LoggingEvent("x", context.getLogger("io.egressservice.X"), Level.ERROR, "failed", new IllegalStateException("boom"),
        null);
    String line = new String(new JsonLineEncoder().encode(event), StandardCharsets.UTF_8);
    assertThat(line).endsWith("}\n").hasLineCount(1);
    var json = new com.fasterxml.jackson.databind.ObjectMapper().readTree(line);
    assertThat(json.path("message").asText()).isEqualTo("failed");
    assertThat(json.path("throwable").asText()).startsWith("java.lang.IllegalStateException: boom").contains("\tat ");
  }

  private static final java.util.function.Function<String, String> JSON_STRING = s -> {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().writeValueAsString(s);
    } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
      throw new AssertionError(e);
    }
  };

  @Test
  void logbackFindsItThroughTheServiceLoader() {
    // the test JVM's own logging was configured at start-up by the very same class
    var context = (LoggerContext) org.slf4j.LoggerFactory.getILoggerFactory();
    assertThat(context.getLogger("ROOT").getAppender("text")).isNotNull();
    assertThat(context.getLogger("io.fabric8").getLevel()).isEqualTo(Level.WARN);
  }
}

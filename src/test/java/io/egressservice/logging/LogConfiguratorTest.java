package io.egressservice.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.status.NopStatusListener;
import io.egressservice.logging.LogConfigurator.Format;
import io.egressservice.logging.LogConfigurator.Settings;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The programmatic configuration reproduces what the former logback.xml did, edge cases included
 * (they were checked against the XML with the same environment values before it was removed).
 */
class LogConfiguratorTest {
  static Settings settings(Map<String, String> env) {
    return LogConfigurator.settings(name -> Optional.ofNullable(env.get(name)));
  }

  @Test
  void defaultsAreInfoAndText() {
    assertThat(settings(Map.of())).isEqualTo(new Settings(Optional.of(Level.INFO), Format.TEXT));
  }

  @Test
  void levelIsReadAsLogbackReadTheXml() {
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "debug")).agentLevel()).contains(Level.DEBUG);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "WARN")).agentLevel()).contains(Level.WARN);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "off")).agentLevel()).contains(Level.OFF);
    // an unknown word was DEBUG; empty, "null" and "inherited" set no level (the root's WARN applies)
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "bogus")).agentLevel()).contains(Level.DEBUG);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "")).agentLevel()).isEmpty();
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "NULL")).agentLevel()).isEmpty();
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_LEVEL", "inherited")).agentLevel()).isEmpty();
  }

  @Test
  void formatIsExactlyTextOrJson() {
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "json")).format()).isEqualTo(Format.JSON);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "text")).format()).isEqualTo(Format.TEXT);
    // the XML named a non-existent appender for any other value, which silenced the logs
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "JSON")).format()).isEqualTo(Format.NONE);
    assertThat(settings(Map.of("EGRESS_AGENT_LOG_FORMAT", "")).format()).isEqualTo(Format.NONE);
  }

  @Test
  void textGoesToStderrWithThePattern() {
    LoggerContext context = new LoggerContext();
    LogConfigurator.apply(context, new Settings(Optional.of(Level.INFO), Format.TEXT));
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
    var encoder = (PatternLayoutEncoder) appender.getEncoder();
    assertThat(encoder.getPattern()).isEqualTo(
        "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %-5level [%thread] %logger{36} - %msg%n");
    var event = new LoggingEvent("x", context.getLogger("io.egressservice.controller.NodeAgent"), Level.INFO,
        "reconcile ({}): {} change(s)", null, new Object[] {"api", 3});
    assertThat(new String(encoder.encode(event), StandardCharsets.UTF_8))
        .matches("\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d\\.\\d{3}(Z|[+-]\\d\\d:\\d\\d) INFO  \\[[^]]+\\] "
            + "i\\.egressservice\\.controller\\.NodeAgent - reconcile \\(api\\): 3 change\\(s\\)\\R");
  }

  @Test
  void jsonOmitsSequenceNumberNanosecondsAndContext() {
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter()); // JSON lines carry the MDC
    LogConfigurator.apply(context, new Settings(Optional.of(Level.DEBUG), Format.JSON));
    var appender = (ConsoleAppender<?>) context.getLogger("ROOT").getAppender("json");
    assertThat(appender.getTarget()).isEqualTo("System.err");
    var encoder = (JsonEncoder) appender.getEncoder();
    var event = new LoggingEvent("x", context.getLogger("io.egressservice.X"), Level.WARN, "hello {}", null,
        new Object[] {1});
    String line = new String(encoder.encode(event), StandardCharsets.UTF_8);
    assertThat(line).startsWith("{\"timestamp\":").contains("\"level\":\"WARN\"", "\"loggerName\":\"io.egressservice.X\"",
        "\"message\":\"hello {}\"").doesNotContain("sequenceNumber", "nanoseconds", "\"context\"");
    assertThat(context.getLogger("io.egressservice").getLevel()).isEqualTo(Level.DEBUG);
  }

  @Test
  void anUnknownFormatAttachesNoAppenderAndNoLevelInherits() {
    LoggerContext context = new LoggerContext();
    LogConfigurator.apply(context, new Settings(Optional.empty(), Format.NONE));
    List<Object> appenders = new ArrayList<>();
    context.getLogger("ROOT").iteratorForAppenders().forEachRemaining(appenders::add);
    assertThat(appenders).isEmpty();
    assertThat(context.getLogger("io.egressservice").getLevel()).isNull();
    assertThat(context.getLogger("io.egressservice").getEffectiveLevel()).isEqualTo(Level.WARN);
  }

  @Test
  void logbackFindsItThroughTheServiceLoader() {
    // the test JVM's own logging was configured at start-up by the very same class
    var context = (LoggerContext) org.slf4j.LoggerFactory.getILoggerFactory();
    assertThat(context.getLogger("ROOT").getAppender("text")).isNotNull();
    assertThat(context.getLogger("io.fabric8").getLevel()).isEqualTo(Level.WARN);
  }
}

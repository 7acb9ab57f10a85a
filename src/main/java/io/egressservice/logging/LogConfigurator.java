package io.egressservice.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.encoder.JsonEncoder;
import ch.qos.logback.classic.encoder.PatternLayoutEncoder;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.spi.ContextAwareBase;
import ch.qos.logback.core.status.NopStatusListener;
import java.util.Optional;
import java.util.function.Function;

/**
 * The logging configuration, in code rather than in a {@code logback.xml}: parsing XML (Joran and the
 * JDK's XML parser) loaded about 600 classes that stayed in the agent's memory for its whole life.
 * Found by logback through {@code META-INF/services}, ahead of its own XML lookup, which it then skips.
 *
 * <p>Behaviour is that of the former {@code logback.xml}: logs go to stderr (stdout stays clean for
 * scripts); {@code EGRESS_AGENT_LOG_FORMAT} {@code text} (default) or {@code json}, exactly these
 * words, any other value attaching no appender (as the XML's missing appender-ref did);
 * {@code EGRESS_AGENT_LOG_LEVEL} sets {@code io.egressservice} (default INFO; logback's reading of a
 * level, see {@link #agentLevel}); {@code io.fabric8} and the root at WARN; no status output. As
 * with the XML's {@code ${...}} substitution, a system property of the same name wins over the
 * environment variable.
 */
public final class LogConfigurator extends ContextAwareBase implements Configurator {
  public static final String LEVEL_VARIABLE = "EGRESS_AGENT_LOG_LEVEL";
  public static final String FORMAT_VARIABLE = "EGRESS_AGENT_LOG_FORMAT";
  static final String PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %-5level [%thread] %logger{36} - %msg%n";

  /** The appender named by {@code EGRESS_AGENT_LOG_FORMAT}. */
  public enum Format {
    TEXT, JSON, NONE
  }

  /**
   * @param agentLevel the level of {@code io.egressservice}; empty: none of its own (it inherits the root's)
   */
  public record Settings(Optional<Level> agentLevel, Format format) {}

  public LogConfigurator() {
    // instantiated by logback's ServiceLoader lookup
  }

  /** The settings from {@code lookup} (system property, then environment, for each variable). */
  public static Settings settings(Function<String, Optional<String>> lookup) {
    return new Settings(agentLevel(lookup.apply(LEVEL_VARIABLE)), format(lookup.apply(FORMAT_VARIABLE)));
  }

  /**
   * As logback read {@code level="${EGRESS_AGENT_LOG_LEVEL:-INFO}"}: unset is INFO; an empty value,
   * {@code null} or {@code inherited} (any case) set no level; an unknown word is DEBUG.
   */
  static Optional<Level> agentLevel(Optional<String> value) {
    if (value.isEmpty()) {
      return Optional.of(Level.INFO);
    }
    String v = value.get();
    if (v.isBlank() || v.equalsIgnoreCase("null") || v.equalsIgnoreCase("inherited")) {
      return Optional.empty();
    }
    return Optional.of(Level.toLevel(v.trim(), Level.DEBUG));
  }

  /** As {@code <appender-ref ref="${EGRESS_AGENT_LOG_FORMAT:-text}"/>} with appenders "text" and "json". */
  static Format format(Optional<String> value) {
    return switch (value.orElse("text")) {
      case "text" -> Format.TEXT;
      case "json" -> Format.JSON;
      default -> Format.NONE;
    };
  }

  static Optional<String> systemPropertyThenEnvironment(String name) {
    return Optional.ofNullable(System.getProperty(name)).or(() -> Optional.ofNullable(System.getenv(name)));
  }

  @Override
  public ExecutionStatus configure(LoggerContext context) {
    apply(context, settings(LogConfigurator::systemPropertyThenEnvironment));
    return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
  }

  /** Configures {@code context} with {@code settings}; public for tests. */
  public static void apply(LoggerContext context, Settings settings) {
    // Registered before anything can report a status: logback then prints none (the XML's NopStatusListener).
    context.getStatusManager().add(new NopStatusListener());
    Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
    root.setLevel(Level.WARN);
    context.getLogger("io.fabric8").setLevel(Level.WARN);
    context.getLogger("io.egressservice").setLevel(settings.agentLevel().orElse(null));
    switch (settings.format()) {
      case TEXT -> root.addAppender(console(context, "text", textEncoder(context)));
      case JSON -> root.addAppender(console(context, "json", jsonEncoder(context)));
      case NONE -> { } // the XML referred to an appender that did not exist: no output at all
    }
  }

  private static Encoder<ILoggingEvent> textEncoder(LoggerContext context) {
    PatternLayoutEncoder encoder = new PatternLayoutEncoder();
    encoder.setContext(context);
    encoder.setPattern(PATTERN);
    encoder.start();
    return encoder;
  }

  private static Encoder<ILoggingEvent> jsonEncoder(LoggerContext context) {
    JsonEncoder encoder = new JsonEncoder();
    encoder.setContext(context);
    encoder.setWithSequenceNumber(false);
    encoder.setWithNanoseconds(false);
    encoder.setWithContext(false);
    encoder.start();
    return encoder;
  }

  private static ConsoleAppender<ILoggingEvent> console(LoggerContext context, String name,
      Encoder<ILoggingEvent> encoder) {
    ConsoleAppender<ILoggingEvent> appender = new ConsoleAppender<>();
    appender.setContext(context);
    appender.setName(name);
    appender.setTarget("System.err");
    appender.setEncoder(encoder);
    appender.start();
    return appender;
  }
}

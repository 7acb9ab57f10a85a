package io.egressservice.logging;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.Configurator;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import ch.qos.logback.core.encoder.Encoder;
import ch.qos.logback.core.spi.ContextAwareBase;
import ch.qos.logback.core.status.NopStatusListener;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * The logging configuration, in code rather than in a {@code logback.xml}: parsing XML (Joran and the
 * JDK's XML parser) loaded about 600 classes that stayed in the agent's memory for its whole life.
 * Found by logback through {@code META-INF/services}, ahead of its own XML lookup, which it then skips.
 *
 * <p>Logs go to stderr (stdout stays clean for scripts); {@code io.fabric8} and the root log at WARN;
 * logback prints no status output. Two variables, each read from a system property of that name if
 * set, else from the environment; values are trimmed and compared ignoring case:
 * <ul>
 *   <li>{@code EGRESS_AGENT_LOG_FORMAT}: {@code text} (the default, {@link TextLineEncoder}: control characters in
 *       messages escaped) or {@code json} (one JSON object a line, {@link JsonLineEncoder});
 *   <li>{@code EGRESS_AGENT_LOG_LEVEL}: the level of {@code io.egressservice}, one of {@code trace},
 *       {@code debug}, {@code info} (the default), {@code warn}, {@code error}, {@code off}.
 * </ul>
 * An empty (or blank) value is the default. Any other value is not fatal, and does not silence the
 * logs: the default is used and one WARN line, once the appender is attached, names the variable,
 * the value and the accepted values. That line is logged by {@code io.egressservice.logging.LogConfigurator},
 * so a level of {@code error} or {@code off} hides it like any other warning. (The former
 * {@code logback.xml} attached no appender at all for an unknown format, read an unknown level as
 * DEBUG, and took {@code null}, {@code inherited} or an empty level to mean the root's WARN; those
 * two words are now unknown values like any other: {@code warn} says the same directly.)
 */
public final class LogConfigurator extends ContextAwareBase implements Configurator {
  public static final String LEVEL_VARIABLE = "EGRESS_AGENT_LOG_LEVEL";
  public static final String FORMAT_VARIABLE = "EGRESS_AGENT_LOG_FORMAT";
  /** With {@link TextLineEncoder}: the message and exception messages escaped; {@code %ex} as logback would add it. */
  static final String PATTERN = "%d{yyyy-MM-dd'T'HH:mm:ss.SSSXXX} %-5level [%thread] %logger{36} - %msg%n%ex";
  static final Level DEFAULT_LEVEL = Level.INFO;
  /** fabric8's informer loop, whose retry warnings the agent replaces with its own line. */
  static final String FABRIC8_REFLECTOR = "io.fabric8.kubernetes.client.informers.impl.cache.Reflector";
  static final Format DEFAULT_FORMAT = Format.TEXT;
  private static final List<Level> LEVELS =
      List.of(Level.TRACE, Level.DEBUG, Level.INFO, Level.WARN, Level.ERROR, Level.OFF);

  /** The log line format named by {@code EGRESS_AGENT_LOG_FORMAT}. */
  public enum Format {
    TEXT, JSON;

    String word() {
      return name().toLowerCase(Locale.ROOT);
    }
  }

  /**
   * @param agentLevel the level of {@code io.egressservice}
   * @param warnings what was wrong with the variables' values (each the text of one WARN line), logged
   *     by {@link #apply} once the appender is attached
   */
  public record Settings(Level agentLevel, Format format, List<String> warnings) {
    public Settings {
      Objects.requireNonNull(agentLevel, "agentLevel");
      Objects.requireNonNull(format, "format");
      warnings = List.copyOf(warnings);
    }

    public Settings(Level agentLevel, Format format) {
      this(agentLevel, format, List.of());
    }
  }

  public LogConfigurator() {
    // instantiated by logback's ServiceLoader lookup
  }

  /** The settings from {@code lookup} (system property, then environment, for each variable). */
  public static Settings settings(Function<String, Optional<String>> lookup) {
    List<String> warnings = new ArrayList<>();
    Level level = parse(LEVEL_VARIABLE, lookup.apply(LEVEL_VARIABLE), LEVELS, l -> l.toString().toLowerCase(Locale.ROOT),
        DEFAULT_LEVEL, warnings);
    Format format = parse(FORMAT_VARIABLE, lookup.apply(FORMAT_VARIABLE), List.of(Format.values()), Format::word,
        DEFAULT_FORMAT, warnings);
    return new Settings(level, format, warnings);
  }

  /**
   * The choice whose word is {@code value} trimmed, ignoring case; {@code fallback} when unset or
   * blank, and also for any other value, which adds a warning to {@code warnings}.
   */
  private static <T> T parse(String variable, Optional<String> value, List<T> choices, Function<T, String> word,
      T fallback, List<String> warnings) {
    String v = value.map(String::trim).orElse("");
    if (v.isEmpty()) {
      return fallback;
    }
    for (T choice : choices) {
      if (word.apply(choice).equalsIgnoreCase(v)) {
        return choice;
      }
    }
    warnings.add(variable + "=\"" + value.get() + "\" is not one of "
        + choices.stream().map(word).collect(Collectors.joining(", "))
        + " (case and surrounding blanks do not matter); using " + word.apply(fallback));
    return fallback;
  }

  static Optional<String> systemPropertyThenEnvironment(String name) {
    return Optional.ofNullable(System.getProperty(name)).or(() -> Optional.ofNullable(System.getenv(name)));
  }

  @Override
  public ExecutionStatus configure(LoggerContext context) {
    apply(context, settings(LogConfigurator::systemPropertyThenEnvironment));
    return ExecutionStatus.DO_NOT_INVOKE_NEXT_IF_ANY;
  }

  /**
   * Configures {@code context} with {@code settings}, then logs each of its warnings (once: this
   * runs once per configuration of the context); public for tests.
   */
  public static void apply(LoggerContext context, Settings settings) {
    // Registered before anything can report a status: logback then prints none (the XML's NopStatusListener).
    context.getStatusManager().add(new NopStatusListener());
    Logger root = context.getLogger(Logger.ROOT_LOGGER_NAME);
    root.setLevel(Level.WARN);
    context.getLogger("io.fabric8").setLevel(Level.WARN);
    // An informer's failed list or watch: fabric8 logs a WARN with a stack trace per retry. The agent says it in one
    // line of its own (informers.ApiConnectivity: the URL, the error, the next retry); the trace only at debug.
    context.getLogger(FABRIC8_REFLECTOR).setLevel(settings.agentLevel().toInt() <= Level.DEBUG_INT ? Level.DEBUG
        : Level.ERROR);
    context.getLogger("io.egressservice").setLevel(settings.agentLevel());
    root.addAppender(switch (settings.format()) {
      case TEXT -> console(context, "text", textEncoder(context));
      case JSON -> console(context, "json", jsonEncoder(context));
    });
    // Only now that there is an appender: logged earlier, the warnings would go nowhere. The context's
    // own logger, not SLF4J's LoggerFactory, which may still be initialising (and calling us).
    Logger log = context.getLogger(LogConfigurator.class);
    settings.warnings().forEach(log::warn);
  }

  private static Encoder<ILoggingEvent> textEncoder(LoggerContext context) {
    TextLineEncoder encoder = new TextLineEncoder();
    encoder.setContext(context);
    encoder.setPattern(PATTERN);
    encoder.start();
    return encoder;
  }

  private static Encoder<ILoggingEvent> jsonEncoder(LoggerContext context) {
    JsonLineEncoder encoder = new JsonLineEncoder();
    encoder.setContext(context);
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

package io.egressservice.logging;

import java.text.MessageFormat;
import java.util.ResourceBundle;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Sends {@link System.Logger} (what the netlink and nft packages log through, to stay free of a
 * logging library, and what the JDK's own HTTP client uses) to SLF4J, so those lines carry the same
 * format, levels and destination as every other log line, instead of java.util.logging's two-line
 * default on stderr. Found by the JDK through {@code META-INF/services/java.lang.System$LoggerFinder}.
 */
public final class Slf4jLoggerFinder extends System.LoggerFinder {
  public Slf4jLoggerFinder() {
    // instantiated by the JDK's ServiceLoader lookup
  }

  @Override
  public System.Logger getLogger(String name, Module module) {
    return new Adapter(name);
  }

  /** One System.Logger name as an SLF4J logger, looked up on first use (SLF4J may be starting). */
  static final class Adapter implements System.Logger {
    private final String name;
    private volatile Logger delegate;

    Adapter(String name) {
      this.name = name;
    }

    private Logger delegate() {
      Logger d = delegate;
      if (d == null) {
        d = LoggerFactory.getLogger(name);
        delegate = d;
      }
      return d;
    }

    @Override
    public String getName() {
      return name;
    }

    @Override
    public boolean isLoggable(System.Logger.Level level) {
      org.slf4j.event.Level l = slf4j(level);
      return l != null && delegate().isEnabledForLevel(l);
    }

    @Override
    public void log(System.Logger.Level level, ResourceBundle bundle, String msg, Throwable thrown) {
      org.slf4j.event.Level l = slf4j(level);
      if (l != null && delegate().isEnabledForLevel(l)) {
        delegate().atLevel(l).setCause(thrown).log(localized(bundle, msg));
      }
    }

    @Override
    public void log(System.Logger.Level level, ResourceBundle bundle, String format, Object... params) {
      org.slf4j.event.Level l = slf4j(level);
      if (l != null && delegate().isEnabledForLevel(l)) {
        String pattern = localized(bundle, format);
        // System.Logger's placeholders are MessageFormat's {0}, {1}: filled in here, so SLF4J gets the sentence.
        String message = params == null || params.length == 0 ? pattern : format(pattern, params);
        Throwable cause = params != null && params.length > 0 && params[params.length - 1] instanceof Throwable t ? t : null;
        delegate().atLevel(l).setCause(cause).log(message);
      }
    }

    @Override
    public void log(System.Logger.Level level, Supplier<String> msgSupplier) {
      org.slf4j.event.Level l = slf4j(level);
      if (l != null && delegate().isEnabledForLevel(l)) {
        delegate().atLevel(l).log(msgSupplier.get());
      }
    }

    private static String format(String pattern, Object[] params) {
      try {
        return new MessageFormat(pattern).format(params);
      } catch (IllegalArgumentException e) {
        return pattern; // not a valid MessageFormat pattern: the text as written
      }
    }

    private static String localized(ResourceBundle bundle, String key) {
      if (bundle == null || key == null) {
        return key;
      }
      try {
        return bundle.getString(key);
      } catch (RuntimeException e) {
        return key;
      }
    }

    /** {@code null} for OFF (never logged); ALL is the finest level, TRACE. */
    static org.slf4j.event.Level slf4j(System.Logger.Level level) {
      return switch (level) {
        case ALL, TRACE -> org.slf4j.event.Level.TRACE;
        case DEBUG -> org.slf4j.event.Level.DEBUG;
        case INFO -> org.slf4j.event.Level.INFO;
        case WARNING -> org.slf4j.event.Level.WARN;
        case ERROR -> org.slf4j.event.Level.ERROR;
        case OFF -> null;
      };
    }
  }
}

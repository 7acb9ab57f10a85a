package io.egressservice.logging;

import java.util.logging.Handler;
import java.util.logging.LogManager;
import java.util.logging.LogRecord;
import org.slf4j.LoggerFactory;
import org.slf4j.event.Level;

/**
 * A java.util.logging handler that hands every record to SLF4J (JNA and fabric8's mock server log
 * through java.util.logging), so no library prints java.util.logging's own two-line format on stderr.
 */
final class JulToSlf4j extends Handler {
  /** Replaces the root logger's handlers (the console handler) with this bridge. */
  static void install() {
    java.util.logging.Logger root = LogManager.getLogManager().getLogger("");
    for (Handler h : root.getHandlers()) {
      root.removeHandler(h);
    }
    root.addHandler(new JulToSlf4j());
  }

  @Override
  public void publish(LogRecord record) {
    if (record == null) {
      return;
    }
    Level level = level(record.getLevel().intValue());
    var log = LoggerFactory.getLogger(record.getLoggerName() == null ? "java.util.logging" : record.getLoggerName());
    if (!log.isEnabledForLevel(level)) {
      return;
    }
    String message = record.getMessage();
    if (message != null && record.getParameters() != null && record.getParameters().length > 0) {
      try {
        message = java.text.MessageFormat.format(message, record.getParameters());
      } catch (IllegalArgumentException e) {
        // not a MessageFormat pattern: the text as written
      }
    }
    log.atLevel(level).setCause(record.getThrown()).log(message);
  }

  static Level level(int julLevel) {
    if (julLevel >= java.util.logging.Level.SEVERE.intValue()) {
      return Level.ERROR;
    }
    if (julLevel >= java.util.logging.Level.WARNING.intValue()) {
      return Level.WARN;
    }
    if (julLevel >= java.util.logging.Level.INFO.intValue()) {
      return Level.INFO;
    }
    if (julLevel >= java.util.logging.Level.FINE.intValue()) {
      return Level.DEBUG;
    }
    return Level.TRACE;
  }

  @Override
  public void flush() {}

  @Override
  public void close() {}
}

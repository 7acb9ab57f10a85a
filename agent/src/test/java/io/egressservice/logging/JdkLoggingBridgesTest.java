package io.egressservice.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import java.util.function.Consumer;
import java.util.logging.Handler;
import java.util.logging.LogManager;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * The JDK's two logging APIs end in our log (logback, hence the chosen format): System.Logger (netlink, the
 * JDK's HTTP client) always, java.util.logging (JNA, fabric8's mock server) once {@link ProcessLogging} is installed.
 */
class JdkLoggingBridgesTest {
  /** What {@code logger} receives in logback while {@code logging} runs. */
  private static List<ILoggingEvent> seenBy(String logger, Runnable logging) {
    Logger target = ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger(logger);
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    target.addAppender(seen);
    try {
      logging.run();
    } finally {
      target.detachAppender(seen);
    }
    return seen.list;
  }

  @Test
  void systemLoggerLinesReachLogbackWithTheMessageFormatArgumentsFilledIn() {
    List<ILoggingEvent> seen = seenBy("io.egressservice.finder.test", () -> {
      System.Logger log = System.getLogger("io.egressservice.finder.test");
      log.log(System.Logger.Level.WARNING, "lost acknowledgements in {0}: {1}", "netns x", "ENOBUFS");
      log.log(System.Logger.Level.DEBUG, "hidden at INFO");
      log.log(System.Logger.Level.ERROR, "stopped", new IllegalStateException("boom"));
    });
    assertThat(seen).extracting(e -> e.getLevel() + " " + e.getFormattedMessage())
        .containsExactly("WARN lost acknowledgements in netns x: ENOBUFS", "ERROR stopped");
    assertThat(seen.get(1).getThrowableProxy().getMessage()).isEqualTo("boom");
  }

  @Test
  void javaUtilLoggingRecordsReachLogbackInsteadOfTheConsoleOnceProcessLoggingIsInstalled() {
    java.util.logging.Logger root = LogManager.getLogManager().getLogger("");
    List<Handler> before = List.of(root.getHandlers());
    try {
      ProcessLogging.install();
      assertThat(root.getHandlers()).as("java.util.logging's console handler is gone").hasSize(1)
          .noneMatch(h -> h instanceof java.util.logging.ConsoleHandler);
      List<ILoggingEvent> seen = seenBy("io.egressservice.jul.test", () -> {
        java.util.logging.Logger jul = java.util.logging.Logger.getLogger("io.egressservice.jul.test");
        jul.log(java.util.logging.Level.WARNING, "mock server on port {0}", 8443);
        jul.log(java.util.logging.Level.SEVERE, "request failed", new IllegalStateException("reset"));
      });
      assertThat(seen).extracting(e -> e.getLevel() + " " + e.getFormattedMessage())
          .containsExactly("WARN mock server on port 8,443", "ERROR request failed");
      assertThat(seen.get(1).getThrowableProxy().getMessage()).isEqualTo("reset");
    } finally {
      // the rest of this JVM's tests keep test-logging.properties' console handler
      for (Handler h : root.getHandlers()) {
        root.removeHandler(h);
      }
      before.forEach(root::addHandler);
    }
  }
}

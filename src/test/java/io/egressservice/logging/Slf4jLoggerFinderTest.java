package io.egressservice.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/** Issue 17, finding 8: System.Logger (netlink, nft) was not bridged to SLF4J. */
class Slf4jLoggerFinderTest {
  @Test
  void systemLoggerLinesReachLogbackWithTheMessageFormatArgumentsFilledIn() {
    Logger target = ((LoggerContext) LoggerFactory.getILoggerFactory()).getLogger("io.egressservice.finder.test");
    ListAppender<ILoggingEvent> seen = new ListAppender<>();
    seen.start();
    target.addAppender(seen);
    try {
      System.Logger log = System.getLogger("io.egressservice.finder.test");
      log.log(System.Logger.Level.WARNING, "lost acknowledgements in {0}: {1}", "netns x", "ENOBUFS");
      log.log(System.Logger.Level.DEBUG, "hidden at INFO");
      log.log(System.Logger.Level.ERROR, "stopped", new IllegalStateException("boom"));
    } finally {
      target.detachAppender(seen);
    }
    assertThat(seen.list).extracting(e -> e.getLevel() + " " + e.getFormattedMessage())
        .containsExactly("WARN lost acknowledgements in netns x: ENOBUFS", "ERROR stopped");
    assertThat(seen.list.get(1).getThrowableProxy().getMessage()).isEqualTo("boom");
  }
}

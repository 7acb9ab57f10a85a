package io.egressservice.logging;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import ch.qos.logback.core.ConsoleAppender;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.logging.LogConfigurator.Format;
import io.egressservice.logging.LogConfigurator.Settings;
import java.nio.charset.StandardCharsets;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.slf4j.event.KeyValuePair;

/**
 * A line about one service or node carries {@code namespace}, {@code service} and {@code node} as keys a log pipeline
 * filters on: fields of the JSON object, {@code key=value} words after the text message, escaped like the message.
 */
class LogKeysTest {
  private static final ObjectMapper JSON = new ObjectMapper();

  @Test
  void jsonLinesCarryTheServiceNamespaceAndNodeAsFieldsOfTheirOwn() throws Exception {
    LoggerContext context = new LoggerContext();
    context.setMDCAdapter(new ch.qos.logback.classic.util.LogbackMDCAdapter());
    LoggingEvent event = event(context, List.of(new KeyValuePair(LogKeys.NAMESPACE, "shop"),
        new KeyValuePair(LogKeys.SERVICE, "web"), new KeyValuePair(LogKeys.NODE, "node-a"),
        new KeyValuePair("message", "a key that would hide the message is left out")));

    JsonNode line = JSON.readTree(new String(new JsonLineEncoder().encode(event), StandardCharsets.UTF_8));

    assertThat(line.path("namespace").asText()).isEqualTo("shop");
    assertThat(line.path("service").asText()).isEqualTo("web");
    assertThat(line.path("node").asText()).isEqualTo("node-a");
    assertThat(line.path("message").asText()).isEqualTo("NetworkNotFound shop/web: network 'blue' not found");
  }

  @Test
  void textLinesEndWithTheKeysAsVisibleWords() {
    LoggerContext context = new LoggerContext();
    LogConfigurator.apply(context, new Settings(Level.INFO, Format.TEXT));
    var encoder = (TextLineEncoder) ((ConsoleAppender<?>) context.getLogger("ROOT").getAppender("text")).getEncoder();
    LoggingEvent event = event(context, List.of(new KeyValuePair(LogKeys.NAMESPACE, "shop"),
        new KeyValuePair(LogKeys.SERVICE, "web"), new KeyValuePair(LogKeys.NODE, "evil\nERROR forged\u001b[8m")));

    String line = new String(encoder.encode(event), StandardCharsets.UTF_8);

    assertThat(line).hasLineCount(1).doesNotContain("\u001b").endsWith(
        " - NetworkNotFound shop/web: network 'blue' not found namespace=shop service=web"
            + " node='evil\\nERROR forged\\x1b[8m'" + System.lineSeparator());
  }

  @Test
  void aLineWithoutKeysIsTheMessageAlone() {
    LoggerContext context = new LoggerContext();
    LogConfigurator.apply(context, new Settings(Level.INFO, Format.TEXT));
    var encoder = (TextLineEncoder) ((ConsoleAppender<?>) context.getLogger("ROOT").getAppender("text")).getEncoder();

    String line = new String(encoder.encode(event(context, null)), StandardCharsets.UTF_8);

    assertThat(line).endsWith(" - NetworkNotFound shop/web: network 'blue' not found" + System.lineSeparator());
  }

  private static LoggingEvent event(LoggerContext context, List<KeyValuePair> pairs) {
    LoggingEvent event = new LoggingEvent("x", context.getLogger("io.egressservice.controller.NodeAgent"), Level.WARN,
        "{} {}: {}", null, new Object[] {"NetworkNotFound", "shop/web", "network 'blue' not found"});
    event.setKeyValuePairs(pairs);
    return event;
  }
}

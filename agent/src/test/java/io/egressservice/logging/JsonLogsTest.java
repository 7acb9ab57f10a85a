package io.egressservice.logging;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.cli.Main;
import io.egressservice.testing.Unprivileged;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.time.OffsetDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * With {@code EGRESS_AGENT_LOG_FORMAT=json} every stderr line of the real
 * process is one JSON object with the formatted message and an RFC 3339 time, whatever wrote it:
 * SLF4J, System.Logger (netlink), java.util.logging, libnftables on C's stderr, the CLI's errors.
 */
class JsonLogsTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final Map<String, String> JSON_LOGS =
      Map.of("EGRESS_AGENT_LOG_FORMAT", "json", "EGRESS_AGENT_LOG_LEVEL", "debug");

  @TempDir Path dir;

  @BeforeEach
  void needsSetpriv() {
    Unprivileged.assumeAvailable();
  }

  @Test
  void everyLineOfNftNetlinkJulAndLibnftablesOutputIsOneJsonObjectWithFormattedMessageAndRfc3339Time()
      throws Exception {
    Unprivileged.Result r = Unprivileged.run(JSON_LOGS, Duration.ofSeconds(60), dir, JsonLogsProbe.class.getName());
    assertThat(r.exit()).as("stderr: %s", r.err()).isZero();

    List<JsonNode> lines = parseEveryLine(r.err());

    assertThat(lines).anySatisfy(l -> {
      assertThat(l.path("loggerName").asText()).isEqualTo("io.egressservice.nft.EgressNftables");
      assertThat(l.path("level").asText()).isEqualTo("WARN");
      assertThat(l.path("message").asText()).isEqualTo("cannot read the nftables generation, listing the table on"
          + " every observe: nftables generation unavailable: switched off by the probe");
    });
    assertThat(lines).anySatisfy(l -> assertThat(l.path("message").asText())
        .contains("native library on stderr: Operation not permitted (you must be root)"));
    assertThat(lines).anySatisfy(l -> {
      assertThat(l.path("loggerName").asText()).isEqualTo("io.egressservice.probe.jul");
      assertThat(l.path("message").asText()).isEqualTo("through java.util.logging");
    });
    assertThat(lines).anySatisfy(l -> {
      assertThat(l.path("loggerName").asText()).isEqualTo("io.egressservice.probe.platform");
      assertThat(l.path("message").asText()).isEqualTo("through System.Logger");
    });
    assertThat(lines).anySatisfy(l -> assertThat(l.path("message").asText()).startsWith("observe failed: "));
  }

  @Test
  void theCommandLinesOwnErrorIsAJsonLineToo() throws Exception {
    Unprivileged.Result r = Unprivileged.run(JSON_LOGS, Duration.ofSeconds(60), dir, Main.class.getName(), "status");
    assertThat(r.exit()).isEqualTo(Main.EXIT_SYSTEM_ERROR);

    List<JsonNode> lines = parseEveryLine(r.err());

    assertThat(lines).hasSize(1);
    assertThat(lines.get(0).path("level").asText()).isEqualTo("ERROR");
    assertThat(lines.get(0).path("message").asText()).startsWith("error: ").contains("CAP_NET_ADMIN");
  }

  /** Each line a JSON object with a parseable RFC 3339 time, a message and no unformatted template. */
  private static List<JsonNode> parseEveryLine(String stderr) throws IOException {
    List<JsonNode> out = new ArrayList<>();
    for (String line : stderr.lines().toList()) {
      JsonNode n;
      try {
        n = JSON.readTree(line);
      } catch (IOException e) {
        throw new AssertionError("not a JSON line: " + line + "\nall of stderr:\n" + stderr, e);
      }
      assertThat(n.isObject()).as(line).isTrue();
      assertThat(OffsetDateTime.parse(n.path("time").asText())).as(line).isNotNull();
      assertThat(n.has("arguments")).as(line).isFalse();
      assertThat(n.path("message").asText()).as(line).isNotEmpty().doesNotContain("{0}", "{}");
      out.add(n);
    }
    assertThat(out).as("stderr lines").isNotEmpty();
    return out;
  }
}

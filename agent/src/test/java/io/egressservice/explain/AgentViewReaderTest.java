package io.egressservice.explain;

import static org.assertj.core.api.Assertions.assertThat;

import com.sun.net.httpserver.HttpServer;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.time.Clock;
import java.time.Instant;
import java.time.ZoneOffset;
import java.util.Map;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** What {@code status} and {@code explain} make of what answers on the agent's metrics port. */
class AgentViewReaderTest {
  private static final Clock NOW = Clock.fixed(Instant.ofEpochSecond(1_800_000_100), ZoneOffset.UTC);
  private HttpServer server;

  @AfterEach
  void stop() {
    if (server != null) {
      server.stop(0);
    }
  }

  @Test
  void theAgentsGaugesBecomeTheViewWithItsAgeAndWhatIsDown() throws Exception {
    URI uri = serve(Map.of("/metrics", """
        # HELP egress_service_agent_api_watch_up 1 while the watch of this kind is established
        # TYPE egress_service_agent_api_watch_up gauge
        egress_service_agent_api_watch_up{kind="EgressService"} 1.0
        egress_service_agent_api_watch_up{kind="Service"} 0.0
        egress_service_agent_api_last_contact_age_seconds{kind="EgressService"} 0.2
        egress_service_agent_api_last_contact_age_seconds{kind="Service"} 41.5
        egress_service_agent_api_watch_idle_seconds{resource="/api/v1/services"} 12.25
        egress_service_agent_api_watch_idle_seconds{resource="/apis/k8s.ovn.org/v1/egressservices"} 0.5
        egress_service_agent_last_fresh_kernel_check_timestamp_seconds 1.80000003E9
        egress_service_agent_reconcile_pending_triggers 2.0
        egress_service_agent_reconcile_pending_oldest_seconds 0.75
        """, "/readyz", "!"), 200, 503);

    AgentView view = new AgentViewReader(NOW).read(uri);

    assertThat(view).isInstanceOf(AgentView.Answered.class);
    AgentView.Answered a = (AgentView.Answered) view;
    assertThat(a.ready()).isFalse();
    assertThat(a.watches()).containsExactly(new AgentView.Watch("EgressService", true, 0.2),
        new AgentView.Watch("Service", false, 41.5));
    assertThat(a.ageSeconds()).isEqualTo(41.5);
    assertThat(a.freshKernelCheckAgeSeconds().getAsDouble()).isEqualTo(70.0);
    assertThat(AgentViewOutput.text(view)).containsExactly(
        "agent's view of the API (its metrics at " + uri + "): NOT ready (HTTP 503: !): the kernel keeps what was last"
            + " applied, which may be older than the API's objects; 41.5 s old",
        "  watches up: 1 of 2 kinds; down: Service (last established 41.5 s ago)",
        "  longest-idle watch: /api/v1/services, no frame for 12.3 s",
        "  kernel last checked against fresh objects: 70.0 s ago",
        "  reconcile work waiting: 2 trigger(s), the oldest for 0.8 s");
  }

  @Test
  void aWatchWhosePathTheAgentDoesNotKnowIsShownWithoutAName() throws Exception {
    URI uri = serve(Map.of("/metrics", """
        egress_service_agent_api_watch_up{kind="Node"} 1.0
        egress_service_agent_api_watch_idle_seconds{resource=""} 2.5
        """, "/readyz", "ok"), 200, 200);

    assertThat(AgentViewOutput.text(new AgentViewReader(NOW).read(uri)))
        .contains("  longest-idle watch: no frame for 2.5 s");
  }

  @Test
  void anotherProgramOnThePortIsNotTakenForTheAgent() throws Exception {
    URI uri = serve(Map.of("/metrics", "process_cpu_seconds_total 3.0\n", "/readyz", "ok"), 200, 200);

    AgentView view = new AgentViewReader(NOW).read(uri);

    assertThat(view).isEqualTo(new AgentView.Unknown(uri.toString(),
        "answered, but not with a node agent's metrics (no egress_service_agent_api_watch_up)"));
  }

  @Test
  void labelValuesWithEscapesAndMalformedLinesAreReadAsTheFormatSays() {
    assertThat(MetricsText.parse("a{r=\"x\\\"y\\\\z\",k=\"v\"} 1.5 1700000000\nbroken{ 3\nb +Inf\n"))
        .containsExactly(new MetricsText.Sample("a", Map.of("r", "x\"y\\z", "k", "v"), 1.5),
            new MetricsText.Sample("b", Map.of(), Double.POSITIVE_INFINITY));
  }

  private URI serve(Map<String, String> bodies, int metricsStatus, int readyStatus) throws Exception {
    server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
    bodies.forEach((path, body) -> server.createContext(path, exchange -> {
      byte[] bytes = body.getBytes(StandardCharsets.UTF_8);
      exchange.sendResponseHeaders(path.equals("/readyz") ? readyStatus : metricsStatus, bytes.length);
      exchange.getResponseBody().write(bytes);
      exchange.close();
    }));
    server.start();
    return URI.create("http://127.0.0.1:" + server.getAddress().getPort() + "/metrics");
  }
}

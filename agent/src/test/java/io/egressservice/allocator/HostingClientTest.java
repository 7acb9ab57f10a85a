package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.health.HealthServer;
import io.egressservice.health.HealthServer.Probe;
import io.egressservice.health.Hosting;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The allocator reads {@code GET /hosting} from an agent's probe port (the real {@link HealthServer}): the services
 * the node receives for; an answer naming another node, or none, is no answer.
 */
class HostingClientTest {
  @Test
  void theAgentsHostingPathListsTheServicesItReceivesForAndOnlyItsOwnNodeCounts() throws Exception {
    try (HealthServer server = HealthServer.start(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0),
            new PrometheusRegistry(), () -> new Probe(true, "alive"), () -> new Probe(true, "ready"));
        HostingClient client = new HostingClient(Duration.ofSeconds(1), Optional.empty())) {
      InetSocketAddress address = new InetSocketAddress(InetAddress.getLoopbackAddress(), server.port());
      assertThat(client.read("node-a", address)).as("before the agent serves it: 404, no answer").isEmpty();

      server.serveJson(Hosting.PATH, () -> new Hosting("node-a", List.of("shop/web", "apps/db")).toJson());
      assertThat(client.read("node-a", address)).contains(new Hosting("node-a", List.of("apps/db", "shop/web")));
      assertThat(client.read("node-b", address)).as("another node's answer (a squatter, a wrong address)").isEmpty();
    }
  }

  @Test
  void aBodyThatIsNotAHostingAnswerIsNone() {
    assertThat(Hosting.parse("{\"node\":\"n\",\"receiving\":[1]}")).isEmpty();
    assertThat(Hosting.parse("ok\n")).isEmpty();
    assertThat(Hosting.parse(new Hosting("n", List.of()).toJson())).contains(new Hosting("n", List.of()));
  }
}

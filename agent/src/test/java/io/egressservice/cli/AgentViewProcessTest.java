package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code status} and {@code explain} show how old the running agent's view of the API is, from the agent's own
 * metrics port: the real {@code run} process against the mock API server, then with that server gone (every watch
 * down, the view growing old while the kernel keeps what was applied).
 */
@EnableKubernetesMockClient(crud = true)
class AgentViewProcessTest {
  KubernetesClient client;
  KubernetesMockServer server;
  @RegisterExtension
  final AgentNode node = new AgentNode("view");
  @TempDir Path dir;

  @Test
  void statusAndExplainShowTheAgentsViewAgeAndWhichWatchesAreDown() throws Exception {
    int port;
    try (ServerSocket free = new ServerSocket(0)) {
      port = free.getLocalPort();
    }
    // a pod's interface and an uplink, so explain has a route to tell
    node.ns().exec("sysctl", "-qw", "net.ipv4.ip_forward=1");
    node.ns().exec("ip", "link", "add", "pod0", "type", "veth", "peer", "name", "uplink0");
    node.ns().exec("ip", "link", "set", "pod0", "up");
    node.ns().exec("ip", "link", "set", "uplink0", "up");
    node.ns().exec("ip", "route", "add", "10.128.0.5/32", "dev", "pod0");
    node.ns().exec("ip", "addr", "add", "192.0.2.10/24", "dev", "uplink0");
    node.ns().exec("ip", "route", "add", "default", "via", "192.0.2.1", "dev", "uplink0");
    node.start(node.run(dir.resolve("agent.log"), port));
    String metrics = "http://127.0.0.1:" + port + "/metrics";
    JsonNode fresh = await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(300))
        .until(() -> status(metrics).path("agentView"), v -> v.path("ready").asBoolean()
            && !kindsUp(v).isEmpty() && kindsUp(v).stream().allMatch(k -> k.endsWith("=true")));
    assertThat(fresh.path("answered").asBoolean()).isTrue();
    assertThat(fresh.path("source").asText()).isEqualTo(metrics);
    assertThat(kindsUp(fresh)).as("the kinds the agent watches")
        .containsExactly("EgressService=true", "EndpointSlice=true", "Node=true", "Service=true");
    assertThat(fresh.path("ageSeconds").asDouble()).as("a view just synced").isLessThan(30);
    List<String> watched = new ArrayList<>();
    fresh.path("idleWatches").forEach(w -> watched.add(w.path("resource").asText()));
    assertThat(watched).as("each watch named by its API path").contains("/apis/k8s.ovn.org/v1/egressservices",
        "/api/v1/nodes");
    assertThat(fresh.path("freshKernelCheckAgeSeconds").isNumber()).as("the kernel was checked from fresh objects")
        .isTrue();
    InProcess.Result text = InProcess.run("status", "--netns", node.ns().name(), "--no-api", "--agent-metrics", metrics);
    assertThat(text.out()).contains("agent's view of the API (its metrics at " + metrics + "): ready; ",
        "  watches up: ", "  kernel last checked against fresh objects: ", "  reconcile work waiting: ");
    InProcess.Result explain = InProcess.run("explain", "10.128.0.5", "--no-api", "--netns", node.ns().name(),
        "--agent-metrics", metrics);
    assertThat(explain.exit()).as(explain.err()).isZero();
    assertThat(explain.out()).contains("agent        agent's view of the API (its metrics at " + metrics + "): ready");

    server.destroy();
    JsonNode stale = await().atMost(Duration.ofSeconds(40)).pollInterval(Duration.ofMillis(500))
        .until(() -> status(metrics).path("agentView"), v -> kindsUp(v).stream().anyMatch(k -> k.endsWith("=false")));
    assertThat(stale.path("answered").asBoolean()).isTrue();
    InProcess.Result staleText = InProcess.run("status", "--netns", node.ns().name(), "--no-api",
        "--agent-metrics", metrics);
    assertThat(staleText.out()).contains("; down: ").containsPattern("last established \\d+\\.\\d s ago");
    JsonNode explained = new ObjectMapper().readTree(InProcess.run("explain", "10.128.0.5", "--no-api", "--netns",
        node.ns().name(), "--agent-metrics", metrics, "-o", "json").out());
    assertThat(kindsUp(explained.path("agentView"))).anyMatch(k -> k.endsWith("=false"));
  }

  @Test
  void withoutAnAgentStatusSaysTheViewIsUnknownAndStillShowsTheKernel() throws Exception {
    int closed;
    try (ServerSocket free = new ServerSocket(0)) {
      closed = free.getLocalPort();
    }
    String metrics = "http://127.0.0.1:" + closed + "/metrics";
    InProcess.Result r = InProcess.run("status", "--netns", node.ns().name(), "--no-api", "--agent-metrics", metrics);
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).startsWith("owned state in ")
        .contains("agent's view of the API (its metrics at " + metrics + "): unknown: no agent answered: ");
    JsonNode json = status(metrics).path("agentView");
    assertThat(json.path("answered").asBoolean()).isFalse();
    assertThat(json.path("error").asText()).startsWith("no agent answered: ");

    InProcess.Result none = InProcess.run("status", "--netns", node.ns().name(), "--no-api", "--agent-metrics", "none");
    assertThat(none.out()).doesNotContain("agent's view");
    InProcess.Result bad = InProcess.run("status", "--netns", node.ns().name(), "--agent-metrics", "file:///etc/passwd");
    assertThat(bad.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(bad.err()).contains("--agent-metrics 'file:///etc/passwd' is not an http URL (or none)");
  }

  private JsonNode status(String metrics) throws Exception {
    InProcess.Result r = InProcess.run("status", "--netns", node.ns().name(), "--no-api", "--agent-metrics", metrics,
        "-o", "json");
    assertThat(r.exit()).as(r.err()).isZero();
    return new ObjectMapper().readTree(r.out());
  }

  private static List<String> kindsUp(JsonNode view) {
    List<String> kinds = new ArrayList<>();
    view.path("watches").forEach(w -> kinds.add(w.path("kind").asText() + "=" + w.path("up").asBoolean()));
    return kinds;
  }
}

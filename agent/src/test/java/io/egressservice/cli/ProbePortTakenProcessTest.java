package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real {@code run} process started while another process holds its metrics port: it used to exit with status 2
 * (and crash-loop in a pod) while the other process answered the probes. Now it keeps programming its node, says
 * which process holds the port, and takes the port once it is free.
 */
@EnableKubernetesMockClient(crud = true)
class ProbePortTakenProcessTest {
  KubernetesClient client;
  @RegisterExtension
  final AgentNode node = new AgentNode("port");
  Process agent;
  @TempDir Path dir;

  @Test
  void anAgentWhosePortIsTakenKeepsRetryingAndNamesTheHolder() throws Exception {
    ServerSocket squatter = new ServerSocket(0, 50, InetAddress.getLoopbackAddress());
    int port = squatter.getLocalPort();
    Path log = dir.resolve("agent.log");
    try {
      agent = start(port, log);
      String holder = "held by pid " + ProcessHandle.current().pid() + " ("
          + Files.readString(Path.of("/proc/self/comm")).trim() + ")";
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
          .until(() -> !agent.isAlive() || Files.readString(log).contains(holder));
      // the rest of the agent works meanwhile: informers, the first reconcile
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200))
          .until(() -> !agent.isAlive() || Files.readString(log).contains("informers synced"));
      String output = Files.readString(log);
      assertThat(agent.isAlive()).as("still running while the port is taken; its log:\n%s", output).isTrue();
      assertThat(output).as("names the holder").contains("cannot listen for /metrics, /healthz and /readyz on 127.0.0.1:"
          + port + ": Address already in use; " + holder);
    } finally {
      squatter.close();
    }

    // the port is free: the agent takes it within a retry (2 s) and answers for its node
    String answer = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(100)).ignoreExceptions()
        .until(() -> get(port, "/healthz"), a -> a.startsWith("HTTP/1.1 200 "));
    assertThat(answer).contains("\r\nEgress-Agent-Node: node-a\r\n", "\r\nEgress-Agent-Pod-UID: uid-of-node-a\r\n");
    assertThat(agent.isAlive()).isTrue();
    assertThat(Files.readString(log)).contains("/metrics, /healthz and /readyz on 127.0.0.1:" + port
        + ": listening now, after");
  }

  private Process start(int port, Path log) throws IOException {
    ProcessBuilder pb = node.run(log, port);
    pb.environment().put("EGRESS_AGENT_POD_UID", "uid-of-node-a");
    return node.start(pb);
  }

  private static String get(int port, String path) throws IOException {
    try (Socket s = new Socket(InetAddress.getLoopbackAddress(), port)) {
      s.setSoTimeout(2000);
      s.getOutputStream().write(("GET " + path + " HTTP/1.0\r\n\r\n").getBytes(StandardCharsets.US_ASCII));
      return new String(s.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    }
  }
}

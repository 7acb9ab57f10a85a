package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.objects.EgressServices;
import io.egressservice.testing.MockApiObjects;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * {@code allocator}, the Deployment's process, as two real replicas (separate JVMs, as in deploy/allocator.yaml)
 * against the mock API server: one leads and writes {@code status.host}, both are ready and expose the allocator's,
 * the JVM's and the build's metrics, and when the leader is stopped the other takes over.
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorCommandTest {
  static final String NAMESPACE = "egress-service-agent";

  KubernetesMockServer server;
  KubernetesClient client;

  record Replica(String name, Process process, int port, Path log) {}

  @Test
  void missingPodNameIsAUserError() {
    InProcess.Result r = InProcess.run("allocator", "--pod-name", "");
    assertThat(r.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(r.err()).contains("--pod-name");
  }

  @Test
  void twoReplicasOneLeadsAndTheOtherTakesOverWhenItStops() throws Exception {
    MockApiObjects.installCrd(client);
    MockApiObjects.readyNodeA(client);
    MockApiObjects.lbServiceOnNodeA(client, "web", "172.30.0.10", "5.5.5.5", "10.128.0.5");
    client.resources(EgressService.class)
        .resource(EgressServices.of("default", "web", SourceIPBy.LOADBALANCERIP, "", "")).create();

    List<Replica> replicas = new ArrayList<>();
    try {
      replicas.add(start("allocator-1"));
      replicas.add(start("allocator-2"));
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() -> "node-a".equals(host()));
      for (Replica r : replicas) {
        await().atMost(Duration.ofSeconds(30)).until(() -> get(r, "/readyz").statusCode() == 200);
        String metrics = get(r, "/metrics").body();
        assertThat(metrics).as("/metrics of %s", r.name())
            .contains("# TYPE egress_service_agent_host_moves_total counter", "egress_service_agent_build_info{",
                "jvm_memory_used_bytes{", "process_resident_memory_bytes ");
      }
      Replica leader = await().atMost(Duration.ofSeconds(30)).until(() -> leader(replicas), Optional::isPresent).get();
      Replica follower = replicas.get(replicas.indexOf(leader) == 0 ? 1 : 0);
      assertThat(leader(follower)).isFalse();
      assertThat(client.leases().inNamespace(NAMESPACE).withName("egress-service-allocator").get().getSpec()
          .getHolderIdentity()).isEqualTo(leader.name());

      leader.process().destroy(); // SIGTERM, as the kubelet stops a pod: the Lease is released
      assertThat(leader.process().waitFor(30, java.util.concurrent.TimeUnit.SECONDS)).isTrue();
      await().atMost(Duration.ofSeconds(15)).until(() -> leader(follower));
      assertThat(Files.readString(leader.log())).contains("releasing the allocator's Lease");
    } finally {
      for (Replica r : replicas) {
        r.process().destroyForcibly();
        r.process().waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
      }
    }
  }

  private String host() {
    EgressService es = client.resources(EgressService.class).inNamespace("default").withName("web").get();
    return es == null || es.getStatus() == null ? null : es.getStatus().getHost();
  }

  private Optional<Replica> leader(List<Replica> replicas) {
    return replicas.stream().filter(this::leader).findFirst();
  }

  private boolean leader(Replica r) {
    try {
      return get(r, "/metrics").body().lines().anyMatch(l -> l.equals("egress_service_agent_allocator_leader 1.0"));
    } catch (IOException | InterruptedException e) {
      return false;
    }
  }

  private static HttpResponse<String> get(Replica r, String path) throws IOException, InterruptedException {
    return HttpClient.newHttpClient().send(
        HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + r.port() + path)).timeout(Duration.ofSeconds(5)).build(),
        HttpResponse.BodyHandlers.ofString());
  }

  /** java -cp <test classpath> io.egressservice.cli.Main allocator, configured as the Deployment configures it. */
  private Replica start(String podName) throws IOException {
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    Path log = Files.createTempFile("esa-" + podName + "-", ".log");
    ProcessBuilder pb = AgentProcess.builder(client, log, List.of(),
        List.of("allocator", "--metrics-port", Integer.toString(port)));
    Map<String, String> env = pb.environment();
    env.put("EGRESS_AGENT_POD_NAME", podName);
    env.put("EGRESS_AGENT_POD_NAMESPACE", NAMESPACE);
    return new Replica(podName, pb.start(), port, log);
  }
}

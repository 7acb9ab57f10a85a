package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.objects.EgressServices;
import io.egressservice.testing.MockApiObjects;
import io.fabric8.kubernetes.api.model.apps.DeploymentBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * {@code allocator} as the Deployment runs it (a real JVM, {@code EGRESS_AGENT_OWNER=deployment/...} and the pod's
 * namespace), stopped with SIGTERM as the kubelet stops it: with its Deployment deleted it removes the host label
 * and status.host it wrote; with its Deployment present (a rolling update, a drain) both stay.
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorUninstallProcessTest {
  static final String NAMESPACE = "egress-service-agent";
  static final String DEPLOYMENT = "egress-service-allocator";
  static final String LABEL = "egress-service.k8s.ovn.org/default-web";

  KubernetesClient client;

  @Test
  void deletingItsDeploymentThenStoppingRemovesTheHostLabelAndStatusHost() throws Exception {
    Process p = startAndAwaitAllocation();
    client.apps().deployments().inNamespace(NAMESPACE).withName(DEPLOYMENT).delete();
    stop(p);
    assertThat(client.nodes().withName("node-a").get().getMetadata().getLabels().get(LABEL)).as(LABEL).isNull();
    assertThat(web().getStatus().getHost()).as("status.host").isEmpty();
  }

  @Test
  void stoppingWithItsDeploymentPresentKeepsTheHostLabelAndStatusHost() throws Exception {
    Process p = startAndAwaitAllocation();
    stop(p);
    assertThat(client.nodes().withName("node-a").get().getMetadata().getLabels()).containsEntry(LABEL, "");
    assertThat(web().getStatus().getHost()).isEqualTo("node-a");
  }

  private Process startAndAwaitAllocation() throws Exception {
    MockApiObjects.installCrd(client);
    MockApiObjects.readyNodeA(client);
    MockApiObjects.lbServiceOnNodeA(client, "web", "172.30.0.10", "5.5.5.5", "10.128.0.5");
    client.resources(EgressService.class)
        .resource(EgressServices.of("default", "web", SourceIPBy.LOADBALANCERIP, "", "")).create();
    client.apps().deployments().inNamespace(NAMESPACE).resource(new DeploymentBuilder().withNewMetadata()
        .withName(DEPLOYMENT).endMetadata().build()).create();
    int port;
    try (ServerSocket probe = new ServerSocket(0)) {
      port = probe.getLocalPort();
    }
    Path log = Files.createTempFile("esa-allocator-uninstall-", ".log");
    ProcessBuilder pb = AgentProcess.builder(client, log, List.of(),
        // No node agent answers the host probes here: without them, node-a stays the host until the stop.
        List.of("allocator", "--metrics-port", Integer.toString(port), "--host-probes=false"));
    Map<String, String> env = pb.environment();
    env.put("EGRESS_AGENT_POD_NAME", "allocator-1");
    env.put("EGRESS_AGENT_POD_NAMESPACE", NAMESPACE);
    env.put("EGRESS_AGENT_OWNER", "deployment/" + DEPLOYMENT);
    Process p = pb.start();
    try {
      await().atMost(Duration.ofSeconds(120)).pollInterval(Duration.ofMillis(200)).until(() ->
          web().getStatus() != null && "node-a".equals(web().getStatus().getHost())
          && "".equals(client.nodes().withName("node-a").get().getMetadata().getLabels().get(LABEL)));
      return p;
    } catch (RuntimeException | Error e) {
      p.destroyForcibly();
      throw new AssertionError(e.getMessage() + "; its log:\n" + Files.readString(log), e);
    }
  }

  private static void stop(Process p) throws InterruptedException {
    p.destroy(); // SIGTERM
    if (!p.waitFor(30, TimeUnit.SECONDS)) {
      p.destroyForcibly();
      throw new AssertionError("the allocator did not stop within 30 s");
    }
  }

  private EgressService web() {
    return client.resources(EgressService.class).inNamespace("default").withName("web").get();
  }
}

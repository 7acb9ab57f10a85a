package io.egressservice.controller;

import static io.egressservice.controller.KubeObjects.lbService;
import static io.egressservice.controller.KubeObjects.slice;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AgentMetrics;
import io.egressservice.nft.ServiceComments;
import io.egressservice.objects.EgressServices;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Over-long names, the process: an EgressService whose namespace/name is over nft's 128-byte comment limit (the
 * mock server, like an API server without validation, stores it) made every reconcile fail, freezing every service;
 * and after failures the backoff (up to 30 s) delayed even the API change that fixed things.
 */
@EnableKubernetesMockClient(crud = true)
class OneObjectCannotFailAReconcileTest {
  static final String NODE = "node-a";
  static final Duration WAIT = Duration.ofSeconds(15);
  static final String LONG_NS = "n".repeat(63);
  static final String LONG_NAME = "l".repeat(200);

  KubernetesMockServer server;
  KubernetesClient client;
  @RegisterExtension
  final AgentKernel kernel = new AgentKernel("f6");

  NodeAgent startAgent(Duration resync, Duration maxBackoff, AgentMetrics metrics) {
    return kernel.start(client, new NodeAgent.Settings(NODE, PlanConfig.defaults(), resync, maxBackoff), metrics,
        (es, type, reason, message) -> {});
  }

  void createWeb() {
    kernel.createService("web", "100", "10.128.0.5");
  }

  @Test
  void aNameTooLongForAnNftCommentIsAppliedWithABoundedOneAndEveryOtherServiceToo() {
    NodeAgent agent = startAgent(Duration.ofMillis(200), Duration.ofSeconds(30), new AgentMetrics());
    client.resources(EgressService.class)
        .resource(EgressServices.of(LONG_NS, LONG_NAME, SourceIPBy.LOADBALANCERIP, "", NODE)).create();
    Service longService = new ServiceBuilder(lbService(LONG_NAME, "172.30.0.9", "5.5.5.9"))
        .editMetadata().withNamespace(LONG_NS).endMetadata().build();
    client.services().resource(longService).create();
    EndpointSlice longSlice = new EndpointSliceBuilder(slice(LONG_NAME, "long-1", NODE, "10.128.0.9"))
        .editMetadata().withNamespace(LONG_NS).endMetadata().build();
    client.discovery().v1().endpointSlices().resource(longSlice).create();
    createWeb();

    String bounded = ServiceComments.of(new ObjectRef(LONG_NS, LONG_NAME));
    await().atMost(WAIT).untilAsserted(() -> assertThat(kernel.snat())
        .contains("10.128.0.5 comment \"default/web\" : 5.5.5.5")
        .contains("10.128.0.9 comment \"" + bounded + "\" : 5.5.5.9"));
    assertThat(kernel.rules()).contains("from 10.128.0.5 lookup 100 proto 201");
    await().atMost(WAIT).until(() -> agent.readiness().ok());
    // Resyncs find the kernel as planned: the bounded comment is read back as this service's.
    long seen = agent.reconcileCount();
    await().atMost(WAIT).until(() -> agent.reconcileCount() >= seen + 3);
    assertThat(agent.lastReconcile().orElseThrow().changesApplied()).isZero();
    assertThat(agent.lastReconcile().orElseThrow().changesRefused()).isZero();
  }

  @Test
  void afterFailedReconcilesAnApiChangeIsReconciledAtOnceNotAfterTheBackoff() throws Exception {
    // The kernel refuses every reconcile while another process owns a table of our name (nft's owner flag):
    // a failure that no object caused, so the agent backs off (100 ms doubling, up to 30 s here as in `run`).
    Process owner = holdOwnedTable();
    AgentMetrics metrics = new AgentMetrics();
    startAgent(Duration.ofMinutes(10), Duration.ofSeconds(30), metrics);
    createWeb();
    // After the 6th failure the next retry is 3.2 s away.
    await().atMost(WAIT).pollInterval(Duration.ofMillis(10)).until(() -> reconcileErrors(metrics) >= 6);

    owner.destroy();
    owner.waitFor(5, TimeUnit.SECONDS);
    long changed = System.nanoTime();
    client.discovery().v1().endpointSlices().resource(slice("web", "web-1", NODE, "10.128.0.5", "10.128.0.6")).update();

    await().atMost(WAIT).pollInterval(Duration.ofMillis(20)).untilAsserted(() -> assertThat(kernel.rules())
        .contains("from 10.128.0.5 lookup 100 proto 201").contains("from 10.128.0.6 lookup 100 proto 201"));
    assertThat(Duration.ofNanos(System.nanoTime() - changed)).isLessThan(Duration.ofMillis(1500));
  }

  /** {@code nft -i} in the namespace, holding {@code table inet egress_service_agent { flags owner; }} until destroyed. */
  Process holdOwnedTable() throws Exception {
    Process p = new ProcessBuilder("ip", "netns", "exec", kernel.ns().name(), "nft", "-i").redirectErrorStream(true).start();
    kernel.closeLater(() -> {
      p.destroyForcibly();
      p.waitFor(5, TimeUnit.SECONDS);
    });
    OutputStream in = p.getOutputStream();
    in.write("add table inet egress_service_agent { flags owner; }\n".getBytes(StandardCharsets.UTF_8));
    in.flush();
    await().atMost(WAIT).until(() -> kernel.ns().exec("nft", "list", "tables").contains("egress_service_agent"));
    return p;
  }

  static double reconcileErrors(AgentMetrics metrics) {
    return metrics.registry().scrape().stream()
        .filter(m -> m.getMetadata().getPrometheusName().equals("egress_service_agent_reconcile_errors"))
        .flatMap(m -> ((io.prometheus.metrics.model.snapshots.CounterSnapshot) m).getDataPoints().stream())
        .mapToDouble(io.prometheus.metrics.model.snapshots.CounterSnapshot.CounterDataPointSnapshot::getValue).sum();
  }
}

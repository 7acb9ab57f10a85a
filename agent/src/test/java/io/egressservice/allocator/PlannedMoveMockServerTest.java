package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.plan.EgressServiceInfo;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressService;

/**
 * Planned host moves make before they break (through the real client, informers and leader election against the
 * mock API server): when the host is cordoned, the allocator names the new host in the also-receive annotation and
 * writes {@code status.host} only once the new host's agent lists the service on {@code /hosting} (or the bound
 * passed); a host that stopped answering is left at once. The nodes' agents are {@link FakeAgent}s on 127.0.1.1
 * and 127.0.1.2 that answer /healthz (naming their node) and /hosting as told.
 */
@EnableKubernetesMockClient(crud = true)
class PlannedMoveMockServerTest {
  private static final String WEB = NS + "/web";

  KubernetesMockServer server;
  KubernetesClient client;

  @RegisterExtension
  final ProbedCluster probed = new ProbedCluster(2);

  private AllocatorRunner runner(Duration readyBound) {
    return probed.runner("allocator", probed.probing(4)
        .withPlannedMoves(new PlannedMoveSettings(readyBound, Duration.ofSeconds(1), Duration.ofMillis(50))),
        new AllocatorMetrics());
  }

  /** The service's host once it has one, with its agent reporting that it receives it (as a real agent would). */
  private int steadyHost() {
    probed.cluster().egressService("web", null, null);
    // status.host "" is no host: the allocator writes it when its first pass runs before the Service is cached
    String hostNode = await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> probed.cluster().host("web").orElse(""), h -> !h.isEmpty());
    int host = hostNode.equals("node1") ? 1 : 2;
    probed.agent(host).receive(List.of(WEB));
    return host;
  }

  private void cordon(int i) {
    client.nodes().withName("node" + i).edit(n -> {
      n.getSpec().setUnschedulable(true);
      return n;
    });
  }

  private Optional<String> alsoReceive() {
    EgressService es = client.resources(EgressService.class).inNamespace(NS).withName("web").get();
    Map<String, String> a = es.getMetadata().getAnnotations();
    return Optional.ofNullable(a == null ? null : a.get(EgressServiceInfo.ALSO_RECEIVE_ANNOTATION));
  }

  private static void stays(java.util.function.BooleanSupplier condition, Duration d, String what)
      throws InterruptedException {
    long end = System.nanoTime() + d.toNanos();
    while (System.nanoTime() < end) {
      assertThat(condition.getAsBoolean()).as(what).isTrue();
      Thread.sleep(50);
    }
  }

  @Test
  void aPlannedMoveWaitsForTheNewHostToReceive() throws Exception {
    runner(Duration.ofSeconds(30));
    int old = steadyHost();
    int next = 3 - old;
    Thread.sleep(500);

    cordon(old);
    // How soon the move starts is not what this test proves (the allocator reacts in about 0.3 s; a full suite's JVM
    // has been seen to take more than 5 s): that it waits for the new host is.
    await().atMost(Duration.ofSeconds(20)).pollInterval(Duration.ofMillis(20))
        .until(() -> alsoReceive().equals(Optional.of("node" + old + ",node" + next)));
    stays(() -> probed.cluster().host("web").equals(Optional.of("node" + old)), Duration.ofSeconds(2),
        "status.host stays with the old host while the new one does not receive");

    long t0 = System.nanoTime();
    probed.agent(next).receive(List.of(WEB));
    await().atMost(Duration.ofSeconds(3)).pollInterval(Duration.ofMillis(20))
        .until(() -> probed.cluster().host("web").equals(Optional.of("node" + next)));
    assertThat((System.nanoTime() - t0) / 1e9).as("seconds from the new host's report to status.host").isLessThan(2.0);
    assertThat(alsoReceive()).as("the old host keeps receiving while the steering nodes switch")
        .contains("node" + old + ",node" + next);
    await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50))
        .until(() -> alsoReceive().isEmpty());
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(probed.cluster().events("web"))
        .anySatisfy(e -> assertThat(e.getMessage()).contains("planned move: node node" + next + " received")));
  }

  @Test
  void anUnplannedMoveDoesNotWait() throws Exception {
    runner(Duration.ofSeconds(30));
    int old = steadyHost();
    int next = 3 - old;
    Thread.sleep(1000);

    long t0 = System.nanoTime();
    probed.agent(old).silence(); // the host stops answering (SYNs unanswered): nothing to make before the break
    await().atMost(Duration.ofSeconds(4)).pollInterval(Duration.ofMillis(20))
        .until(() -> probed.cluster().host("web").equals(Optional.of("node" + next)));
    assertThat((System.nanoTime() - t0) / 1e9).isLessThan(3.0);
    assertThat(probed.agent(next).hostingReads()).as("/hosting of the new host was not waited for").isZero();
    assertThat(alsoReceive()).isEmpty();
  }

  @Test
  void aNewHostThatNeverReportsIsMovedToAfterTheBound() throws Exception {
    runner(Duration.ofSeconds(2));
    int old = steadyHost();
    int next = 3 - old;
    Thread.sleep(500);

    long t0 = System.nanoTime();
    cordon(old);
    await().atMost(Duration.ofSeconds(6)).pollInterval(Duration.ofMillis(20))
        .until(() -> probed.cluster().host("web").equals(Optional.of("node" + next)));
    double seconds = (System.nanoTime() - t0) / 1e9;
    assertThat(seconds).as("seconds from the cordon to status.host: the bound, not forever").isBetween(1.9, 5.0);
    assertThat(probed.agent(next).hostingReads()).as("the new host was asked").isPositive();
    await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(probed.cluster().events("web"))
        .anySatisfy(e -> assertThat(e.getMessage())
            .contains("node node" + next + " did not report that it receives the service within 2 s, moved anyway")));
    await().atMost(Duration.ofSeconds(5)).pollInterval(Duration.ofMillis(50)).until(() -> alsoReceive().isEmpty());
  }
}

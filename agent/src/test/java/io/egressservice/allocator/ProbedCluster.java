package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.LEASE_NS;
import static org.awaitility.Awaitility.await;

import io.egressservice.metrics.AllocatorMetrics;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.egressservice.testing.MockApiFields;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The shared fixture of the allocator tests that probe hosts, on fabric8's mock API server: our CRD; Ready nodes
 * {@code node1..n} at 127.0.1.i, each with a {@link FakeAgent} answering the host probe there (one port for all, as
 * the agents' port is one per cluster); the LoadBalancer Service {@code web} (203.0.113.5) with an endpoint on every
 * node; and allocator runners that each have a client of their own, as separate replicas would. Register it with
 * {@code @RegisterExtension} beside {@code @EnableKubernetesMockClient(crud = true)}: it sets up before each test
 * and closes runners, clients and agents after it.
 */
final class ProbedCluster implements BeforeEachCallback, AfterEachCallback {
  private final int nodes;
  private KubernetesMockServer server;
  private MockCluster cluster;
  private int port;
  private final Map<Integer, FakeAgent> agents = new HashMap<>();
  /** Runners first (newest first), then their clients: a runner stops before its client goes. */
  private final List<AutoCloseable> toClose = new ArrayList<>();

  /** {@code nodes} nodes, each probed. */
  ProbedCluster(int nodes) {
    this.nodes = nodes;
  }

  @Override
  public void beforeEach(ExtensionContext context) throws Exception {
    server = MockApiFields.injected(context, KubernetesMockServer.class);
    KubernetesClient client = MockApiFields.injected(context, KubernetesClient.class);
    cluster = new MockCluster(client).crd();
    port = FakeAgent.freePort();
    int[] indexes = new int[nodes];
    for (int i = 1; i <= nodes; i++) {
      client.resource(new NodeBuilder()
          .withNewMetadata().withName("node" + i).endMetadata()
          .withNewSpec().withPodCIDR("10.128." + i + ".0/24").withPodCIDRs("10.128." + i + ".0/24").endSpec()
          .withNewStatus()
              .addNewAddress().withType("InternalIP").withAddress("127.0.1." + i).endAddress()
              .addNewCondition().withType("Ready").withStatus("True").endCondition()
          .endStatus().build()).create();
      agents.put(i, FakeAgent.answering(new InetSocketAddress("127.0.1." + i, port), "node" + i));
      indexes[i - 1] = i;
    }
    cluster.lbService("web", "203.0.113.5");
    cluster.endpoints("web", indexes);
  }

  MockCluster cluster() {
    return cluster;
  }

  /** The agent of {@code node<i>}. */
  FakeAgent agent(int i) {
    return agents.get(i);
  }

  /**
   * Fast leases (2 s, renew 1.5 s, retry 200 ms, resync 30 s) and host probes of the agents' port every 500 ms
   * (timeout 1 s), {@code failures} in a row marking a host down.
   */
  AllocatorConfig probing(int failures) {
    return new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(2),
        Duration.ofMillis(1500), Duration.ofMillis(200), Duration.ofSeconds(30))
        .withProbes(new HostProbes(true, port, Duration.ofMillis(500), Duration.ofSeconds(1), failures,
            Optional.empty(), new HostHealth.Settings(2, Duration.ofSeconds(30), Duration.ofSeconds(1))));
  }

  /** A runner with a client of its own, returned once its watches are open. */
  AllocatorRunner runner(String identity, AllocatorConfig config, AllocatorMetrics metrics) {
    KubernetesClient own = server.createClient();
    AllocatorRunner r = AllocatorRunner.start(own, LEASE_NS, identity, config, metrics);
    toClose.add(own);
    toClose.add(0, r);
    return MockCluster.watching(r);
  }

  /** Waits (10 s at most) until {@code web}'s host is {@code node}. */
  void awaitHost(String node) {
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(20))
        .until(() -> cluster.host("web").equals(Optional.of(node)));
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    try {
      for (AutoCloseable c : toClose) {
        c.close();
      }
    } finally {
      for (FakeAgent a : agents.values()) {
        a.close();
      }
    }
  }
}

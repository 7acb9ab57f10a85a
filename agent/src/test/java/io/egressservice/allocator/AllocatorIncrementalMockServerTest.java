package io.egressservice.allocator;

import static io.egressservice.allocator.MockCluster.NS;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.informers.ClusterInformers;
import io.egressservice.metrics.AllocatorMetrics;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.informers.impl.cache.CacheImpl;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The allocator's passes follow what opted in: churn on objects no EgressService names runs none, and a change of
 * one opted-in service's endpoints decides that service only. Through the real client and informers against the
 * mock API server, leading without an election.
 */
@EnableKubernetesMockClient(crud = true)
class AllocatorIncrementalMockServerTest {
  private static final int UNRELATED = 10_000;
  private static final int OPTED_IN = 20;

  KubernetesMockServer server;
  KubernetesClient client;

  private MockCluster cluster;
  private ClusterInformers informers;
  private Allocator allocator;
  private final AllocatorMetrics metrics = new AllocatorMetrics();

  @BeforeEach
  void setUp() {
    cluster = new MockCluster(client).crd();
    cluster.node(1, Map.of());
    cluster.node(2, Map.of());
    for (int i = 0; i < OPTED_IN; i++) {
      cluster.lbService("web" + i, "203.0.113." + (i + 1));
      cluster.endpoints("web" + i, 1 + i % 2);
      cluster.egressService("web" + i, null, null);
    }
    // Resyncs (the periodic full pass) are out of the way: only the events count.
    informers = ClusterInformers.create(client, Duration.ofHours(1));
    informers.start();
    await().atMost(Duration.ofSeconds(10)).until(informers::hasSynced);
  }

  @AfterEach
  void tearDown() {
    if (allocator != null) {
      allocator.close();
    }
    informers.close();
  }

  private static EndpointSlice unrelatedSlice(int i, int endpoint) {
    return new EndpointSliceBuilder()
        .withNewMetadata().withNamespace(NS).withName("other" + i + "-x")
            .addToLabels("kubernetes.io/service-name", "other" + i)
            .addToLabels("endpointslice.kubernetes.io/managed-by", "endpointslice-controller.k8s.io").endMetadata()
        .withAddressType("IPv4")
        .addToEndpoints(new EndpointBuilder().withAddresses("10.128.1." + (10 + endpoint % 200)).withNodeName("node1")
            .build())
        .build();
  }

  /**
   * The mock API server finds an object by scanning all it holds (creating 10,000 through it takes minutes), so most
   * unrelated slices go straight into the informer's cache before the allocator registers its handlers: fabric8
   * hands them to its handlers as additions, as after a start.
   */
  @SuppressWarnings("unchecked")
  private static <T extends HasMetadata> CacheImpl<T> cache(SharedIndexInformer<T> informer) {
    return (CacheImpl<T>) informer.getIndexer();
  }

  private Allocator leadingAllocator() {
    AllocatorConfig config = new AllocatorConfig(AllocatorConfig.DEFAULT_LEASE_NAME, Duration.ofSeconds(15),
        Duration.ofSeconds(10), Duration.ofSeconds(2), Duration.ofHours(1));
    Allocator a = new Allocator(client, informers, config, "a", metrics);
    a.start();
    a.startLeading();
    await().atMost(Duration.ofSeconds(20)).until(() -> a.statusWrites() >= OPTED_IN && a.labelPatches() >= 2);
    // converged: the status writes and label patches come back as events and are decided once more
    long[] seen = {-1};
    await().atMost(Duration.ofSeconds(10)).pollInterval(Duration.ofMillis(400)).until(() -> {
      long p = a.passes();
      boolean quiet = p == seen[0];
      seen[0] = p;
      return quiet;
    });
    return a;
  }

  @Test
  void churnOnTenThousandUnrelatedSlicesRunsNoPass() {
    int throughApi = 100;
    for (int i = throughApi; i < UNRELATED; i++) {
      cache(informers.endpointSlices()).put(unrelatedSlice(i, 0));
    }
    for (int i = 0; i < throughApi; i++) {
      client.resource(unrelatedSlice(i, 0)).create();
    }
    // The caches keep only what an EgressService names: the unrelated slices never stay (ClusterInformers).
    await().atMost(Duration.ofSeconds(20))
        .until(() -> informers.endpointSlices().getStore().list().size() == OPTED_IN);
    allocator = leadingAllocator();
    long passes = allocator.passes();
    long evaluated = allocator.servicesEvaluated();
    long full = allocator.fullPasses();
    long writes = allocator.statusWrites();

    for (int round = 1; round <= 3; round++) {
      for (int i = 0; i < throughApi; i++) {
        client.resource(unrelatedSlice(i, round)).update();
      }
    }
    client.discovery().v1().endpointSlices().inNamespace(NS).withName("other0-x").delete();
    cluster.lbService("other1", "203.0.113.250"); // a Service of the same name as a slice, still not opted in
    // The caches keep only what an EgressService names: none of this churn is cached, so there is nothing to wait
    // for in them; the updates are on the server, and the quiet period below covers their watch events.
    await().atMost(Duration.ofSeconds(20)).until(() ->
        client.discovery().v1().endpointSlices().inNamespace(NS).withName("other" + (throughApi - 1) + "-x").get()
            .getEndpoints().get(0).getAddresses().get(0).equals("10.128.1.13"));
    assertThat(informers.endpointSlices().getStore().getByKey(NS + "/other5-x")).isNull();
    assertThat(informers.services().getStore().getByKey(NS + "/other1")).isNull();
    // A pass that fails (a write timing out on a loaded machine) is retried as a full pass: those are not the churn's.
    await().during(Duration.ofMillis(1500)).atMost(Duration.ofSeconds(4))
        .until(() -> allocator.passes() - passes == allocator.fullPasses() - full);
    assertThat(allocator.servicesEvaluated() - evaluated).isEqualTo(OPTED_IN * (allocator.fullPasses() - full));
    // the churn writes nothing (a write before convergence's last echo may land before this point, not after)
    assertThat(allocator.statusWrites()).isEqualTo(writes);

    // an EgressService for one of them: now its slices count
    cluster.egressService("other1", null, null);
    await().atMost(Duration.ofSeconds(10)).until(() -> cluster.host("other1").equals(Optional.of("node1")));
  }

  @Test
  void anOptedInEndpointChangeDecidesOnlyItsService() {
    allocator = leadingAllocator();
    long passes = allocator.passes();
    long evaluated = metrics.servicesEvaluated();
    long full = allocator.fullPasses();
    assertThat(cluster.host("web4")).contains("node1");

    cluster.endpoints("web4", 2); // its only endpoint moves to node2: so does its host
    await().atMost(Duration.ofSeconds(10)).until(() -> cluster.host("web4").equals(Optional.of("node2")));
    await().atMost(Duration.ofSeconds(10)).until(() -> allocator.passes() > passes);
    // the endpoint change, then the echo of the status write and of each node's label patch: web4 each time
    await().atMost(Duration.ofSeconds(10)).until(() -> cluster.labels("node2").containsKey(
        "egress-service.k8s.ovn.org/" + NS + "-web4") && !cluster.labels("node1").containsKey(
        "egress-service.k8s.ovn.org/" + NS + "-web4"));
    await().during(Duration.ofMillis(600)).atMost(Duration.ofSeconds(5)).until(() -> true);
    // A pass that fails (a write timing out on a loaded machine) is retried as a full pass, deciding all.
    long fullRuns = allocator.fullPasses() - full;
    long runs = allocator.passes() - passes - fullRuns;
    assertThat(metrics.servicesEvaluated() - evaluated - OPTED_IN * fullRuns)
        .as("services decided in %d incremental passes", runs).isLessThanOrEqualTo(runs).isPositive();
    assertThat(allocator.servicesEvaluated() - evaluated).isEqualTo(metrics.servicesEvaluated() - evaluated);
  }
}

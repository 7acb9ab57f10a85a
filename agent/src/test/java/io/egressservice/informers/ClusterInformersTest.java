package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.allocator.AllocatorInputs;
import io.egressservice.objects.EgressServices;
import io.egressservice.objects.PlanInputs;
import io.fabric8.kubernetes.api.model.ManagedFieldsEntryBuilder;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

/** The shared informers against fabric8's mock API server (CRUD mode). */
@EnableKubernetesMockClient(crud = true)
class ClusterInformersTest {
  KubernetesClient client;

  @Test
  void theCachesKeepWhatTheAgentReadsAndDropManagedFieldsAndAnnotations() {
    client.services().resource(new ServiceBuilder()
        .withNewMetadata().withName("web").withNamespace("default")
          .withLabels(Map.of("app", "web"))
          .withAnnotations(Map.of("kubectl.kubernetes.io/last-applied-configuration", "{\"a whole copy\": true}"))
          .withManagedFields(new ManagedFieldsEntryBuilder().withManager("kubectl").withOperation("Apply").build())
        .endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP("172.30.0.10").endSpec()
        .build()).create();
    client.resource(EgressServices.of("default", "web", null, null, null)).create();
    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      informers.start();
      await().atMost(Duration.ofSeconds(10)).until(informers::hasSynced);

      Service cached = informers.services().getStore().getByKey("default/web");
      assertThat(cached.getSpec().getClusterIP()).isEqualTo("172.30.0.10");
      assertThat(cached.getMetadata().getLabels()).containsEntry("app", "web");
      assertThat(cached.getMetadata().getManagedFields()).isNullOrEmpty();
      assertThat(cached.getMetadata().getAnnotations()).isNullOrEmpty();
      // what the API server holds is untouched
      assertThat(client.services().inNamespace("default").withName("web").get().getMetadata().getAnnotations())
          .containsKey("kubectl.kubernetes.io/last-applied-configuration");
    }
  }

  @Test
  void endpointSlicesWithoutAServiceAreNotCached() {
    client.resource(EgressServices.of("default", "web", null, null, null)).create();
    client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder()
        .withNewMetadata().withName("web-1").withNamespace("default")
          .withLabels(Map.of("kubernetes.io/service-name", "web")).endMetadata()
        .withAddressType("IPv4").build()).create();
    client.discovery().v1().endpointSlices().resource(new EndpointSliceBuilder()
        .withNewMetadata().withName("orphan").withNamespace("default").endMetadata()
        .withAddressType("IPv4").build()).create();
    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      informers.start();
      informers.start(); // a second start (the allocator's, after the node agent's) changes nothing
      await().atMost(Duration.ofSeconds(10)).until(informers::hasSynced);

      assertThat(informers.endpointSlices().getStore().listKeys()).containsExactly("default/web-1");
      assertThat(informers.snapshot().endpointSlices()).hasSize(1);
    }
  }

  @Test
  void theNodeCacheHoldsALeanCopyAndHandlersStillTellARelevantChangeFromAHeartbeat() {
    Node fixture = LeanObjectsTest.nodes().get(0);
    fixture.getMetadata().setResourceVersion(null);
    client.resource(fixture).create();
    // for each update: did what the plan or the allocator reads change?
    List<Boolean> updates = new CopyOnWriteArrayList<>();
    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      informers.addEventHandler(Node.class, new ResourceEventHandler<Node>() {
        @Override
        public void onAdd(Node obj) {}

        @Override
        public void onUpdate(Node oldObj, Node newObj) {
          updates.add(!PlanInputs.node(oldObj).equals(PlanInputs.node(newObj))
              || !AllocatorInputs.node(oldObj).equals(AllocatorInputs.node(newObj)));
        }

        @Override
        public void onDelete(Node obj, boolean deletedFinalStateUnknown) {}
      });
      informers.start();
      await().atMost(Duration.ofSeconds(10)).until(informers::hasSynced);

      Node cached = informers.nodes().getStore().getByKey("worker-a1");
      assertThat(cached.getStatus().getImages()).isEmpty();
      assertThat(cached.getMetadata().getManagedFields()).isEmpty();
      assertThat(AllocatorInputs.node(cached)).isEqualTo(AllocatorInputs.node(fixture));

      client.nodes().withName("worker-a1").edit(n -> {
        n.getMetadata().getAnnotations().put("k8s.ovn.org/node-chassis-id", "0f0e0d0c-0b0a-4c3b-9a8d-000000000001");
        n.getStatus().getConditions().forEach(c -> c.setLastHeartbeatTime("2024-06-02T14:06:31Z"));
        n.getStatus().getImages().remove(0);
        return n;
      });
      await().atMost(Duration.ofSeconds(10)).until(() -> updates.size() == 1);
      client.nodes().withName("worker-a1").edit(n -> {
        n.getMetadata().getLabels().put("egress-capable", "false");
        return n;
      });
      await().atMost(Duration.ofSeconds(10)).until(() -> updates.size() == 2);

      assertThat(updates).containsExactly(false, true);
      assertThat(informers.nodes().getStore().getByKey("worker-a1").getMetadata().getLabels())
          .containsEntry("egress-capable", "false");
    }
  }
}

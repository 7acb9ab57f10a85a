package io.egressservice.controller;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.Status;
import io.fabric8.kubernetes.api.model.WatchEvent;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.informers.SharedIndexInformer;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.awaitility.Awaitility;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

/** The client serialization that registers the watched kinds instead of scanning fabric8's whole model. */
@EnableKubernetesMockClient(crud = true)
class AgentSerializationTest {
  KubernetesMockServer server;
  KubernetesClient client;

  @Test
  void watchEventsOfTheRegisteredKindsAreTyped() {
    KubernetesSerialization s = AgentSerialization.create();
    Map<String, Class<?>> expected = Map.of(
        "{\"apiVersion\":\"v1\",\"kind\":\"Service\",\"metadata\":{\"name\":\"a\"}}", Service.class,
        "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"a\"}}", Node.class,
        "{\"apiVersion\":\"discovery.k8s.io/v1\",\"kind\":\"EndpointSlice\",\"metadata\":{\"name\":\"a\"}}",
        EndpointSlice.class,
        "{\"apiVersion\":\"k8s.ovn.org/v1\",\"kind\":\"EgressService\",\"metadata\":{\"name\":\"a\"}}",
        EgressService.class);
    expected.forEach((json, type) -> assertThat(
        s.unmarshal("{\"type\":\"ADDED\",\"object\":" + json + "}", WatchEvent.class).getObject()).isExactlyInstanceOf(type));
  }

  @Test
  void aWatchErrorIsAStatusSoThatGoneTriggersARelist() {
    WatchEvent e = AgentSerialization.create().unmarshal("{\"type\":\"ERROR\",\"object\":{\"apiVersion\":\"v1\","
        + "\"kind\":\"Status\",\"status\":\"Failure\",\"reason\":\"Expired\",\"code\":410}}", WatchEvent.class);
    assertThat(e.getObject()).isInstanceOfSatisfying(Status.class, st -> assertThat(st.getCode()).isEqualTo(410));
  }

  @Test
  void informersOfTheAgentAndTheAllocatorSeeTypedObjects() {
    try (KubernetesClient agentClient = AgentSerialization.clientBuilder().withConfig(client.getConfiguration()).build()) {
      Map<Class<?>, List<Object>> seen = new ConcurrentHashMap<>();
      List<SharedIndexInformer<? extends HasMetadata>> informers = List.of(
          inform(agentClient.resources(EgressService.class).inAnyNamespace().runnableInformer(0), seen),
          inform(agentClient.services().inAnyNamespace().runnableInformer(0), seen),
          inform(agentClient.discovery().v1().endpointSlices().inAnyNamespace().runnableInformer(0), seen),
          inform(agentClient.nodes().runnableInformer(0), seen));
      try {
        Awaitility.await().atMost(10, TimeUnit.SECONDS).until(() -> informers.stream().allMatch(SharedIndexInformer::hasSynced));
        // created after the sync: they arrive as watch events
        client.resource(KubeObjects.egressService("es", EgressServiceSpec.SourceIPBy.LOADBALANCERIP, "100", "node-a")).create();
        client.resource(KubeObjects.lbService("es", "172.30.0.1", "5.5.5.5")).create();
        client.resource(KubeObjects.slice("es", "es-1", "node-a", "10.128.0.1")).create();
        client.resource(KubeObjects.node("node-a", "192.168.1.10", "10.128.0.0/16")).create();
        Awaitility.await().atMost(10, TimeUnit.SECONDS).until(() -> seen.size() == 4);
        seen.forEach((type, objects) -> assertThat(objects).allSatisfy(o -> assertThat(o).isExactlyInstanceOf(type)));
        assertThat(seen).containsOnlyKeys(EgressService.class, Service.class, EndpointSlice.class, Node.class);
      } finally {
        informers.forEach(SharedIndexInformer::close);
      }
    }
  }

  private static <T extends HasMetadata> SharedIndexInformer<T> inform(SharedIndexInformer<T> informer,
      Map<Class<?>, List<Object>> seen) {
    informer.addEventHandler(new ResourceEventHandler<T>() {
      @Override
      public void onAdd(T obj) {
        seen.computeIfAbsent(informer.getApiTypeClass(), k -> new CopyOnWriteArrayList<>()).add(obj);
      }

      @Override
      public void onUpdate(T oldObj, T newObj) {
        onAdd(newObj);
      }

      @Override
      public void onDelete(T obj, boolean deletedFinalStateUnknown) {}
    });
    informer.start();
    return informer;
  }
}

package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.objects.EgressServices;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.ServiceBuilder;
import io.fabric8.kubernetes.api.model.ServiceListBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceListBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.informers.ResourceEventHandler;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;

/**
 * The caches follow the opted-in set: through the real client and informers against fabric8's
 * mock API server in CRUD mode (it has no watch history, no paging and no validation; nothing here needs
 * them).
 */
@EnableKubernetesMockClient(crud = true)
class OptInInformersTest {
  static final Duration WAIT = Duration.ofSeconds(30);
  KubernetesClient client;
  KubernetesMockServer server;

  static Service service(String ns, String name, String clusterIp) {
    return new ServiceBuilder()
        .withNewMetadata().withName(name).withNamespace(ns).endMetadata()
        .withNewSpec().withType("LoadBalancer").withClusterIP(clusterIp).addToSelector("app", name).endSpec()
        .build();
  }

  static EndpointSlice slice(String ns, String service, String name, String address) {
    return new EndpointSliceBuilder()
        .withNewMetadata().withName(name).withNamespace(ns).addToLabels("kubernetes.io/service-name", service)
          .endMetadata()
        .withAddressType("IPv4")
        .withEndpoints(new EndpointBuilder().withAddresses(address).withNodeName("worker-a").build())
        .build();
  }

  static EgressService egressService(String ns, String name) {
    return EgressServices.of(ns, name, null, null, null);
  }

  /** Each handler call as "kind verb namespace/name", updates with the new resourceVersion's presence. */
  static final class Recorder<T extends HasMetadata> implements ResourceEventHandler<T> {
    final List<String> calls = new CopyOnWriteArrayList<>();

    private static String ref(HasMetadata o) {
      return o.getKind() + " " + o.getMetadata().getNamespace() + "/" + o.getMetadata().getName();
    }

    @Override
    public void onAdd(T obj) {
      calls.add("add " + ref(obj));
    }

    @Override
    public void onUpdate(T oldObj, T newObj) {
      calls.add((oldObj == newObj ? "resync " : "update ") + ref(newObj));
    }

    @Override
    public void onDelete(T obj, boolean deletedFinalStateUnknown) {
      calls.add("delete " + ref(obj));
    }

    List<String> about(String namespace) {
      return calls.stream().filter(c -> c.contains(" " + namespace + "/")).toList();
    }
  }

  private void createAll(List<? extends HasMetadata> objects) throws Exception {
    io.egressservice.testing.KubeWrites.createAll(client, objects, WAIT);
  }


  /**
   * The 10,000 bystanders are served by expectations on the two list requests: the CRUD mock's create is
   * linear in what it holds, so creating them one by one takes minutes. The 50 opted-in objects are in both
   * the lists and the CRUD store (where the watches, backfills and EgressServices are served from).
   */
  @Test
  void tenThousandServicesAndSlicesThatDidNotOptInAreNotCachedWhileTheFiftyThatDidAre() throws Exception {
    List<HasMetadata> opted = new ArrayList<>();
    List<Service> allServices = new ArrayList<>();
    List<EndpointSlice> allSlices = new ArrayList<>();
    for (int i = 0; i < 50; i++) {
      opted.add(egressService("opted", "svc-" + i));
      allServices.add(service("opted", "svc-" + i, "172.30.1." + i));
      allSlices.add(slice("opted", "svc-" + i, "svc-" + i + "-a", "10.128.1." + i));
    }
    opted.addAll(allServices);
    opted.addAll(allSlices);
    createAll(opted);
    // as stored (with their resourceVersions), so that the lists and the watches agree
    allServices.clear();
    allServices.addAll(client.services().inNamespace("opted").list().getItems());
    allSlices.clear();
    allSlices.addAll(client.discovery().v1().endpointSlices().inNamespace("opted").list().getItems());
    for (int i = 0; i < 10_000; i++) {
      allServices.add(service("bystanders", "other-" + i, "172.31." + i / 250 + "." + i % 250));
      allSlices.add(slice("bystanders", "other-" + i, "other-" + i + "-a", "10.129." + i / 250 + "." + i % 250));
    }
    server.expect().get().withPath("/api/v1/services?limit=" + ClusterInformers.PAGE)
        .andReturn(200, new ServiceListBuilder().withNewMetadata().withResourceVersion("1").endMetadata()
            .withItems(allServices).build())
        .always();
    server.expect().get()
        .withPath("/apis/discovery.k8s.io/v1/endpointslices?labelSelector=kubernetes.io%2Fservice-name&limit="
            + ClusterInformers.PAGE)
        .andReturn(200, new EndpointSliceListBuilder().withNewMetadata(null, null, "1", null)
            .withItems(allSlices).build())
        .always();

    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      Recorder<Service> services = new Recorder<>();
      Recorder<EndpointSlice> slices = new Recorder<>();
      informers.addEventHandler(Service.class, services);
      informers.addEventHandler(EndpointSlice.class, slices);
      informers.start();
      await().atMost(WAIT).until(informers::hasSynced);

      assertThat(informers.snapshot().egressServices()).hasSize(50);
      assertThat(informers.snapshot().services()).hasSize(50)
          .allSatisfy(s -> assertThat(s.getMetadata().getNamespace()).isEqualTo("opted"));
      assertThat(informers.snapshot().endpointSlices()).hasSize(50)
          .allSatisfy(s -> assertThat(s.getMetadata().getNamespace()).isEqualTo("opted"));
      assertThat(informers.service("opted", "svc-7")).hasValueSatisfying(
          s -> assertThat(s.getSpec().getClusterIP()).isEqualTo("172.30.1.7"));
      assertThat(informers.service("bystanders", "other-7")).isEmpty();
      assertThat(informers.endpointSlicesOf("opted", "svc-7")).extracting(s -> s.getMetadata().getName())
          .containsExactly("svc-7-a");
      assertThat(informers.endpointSlicesOf("bystanders", "other-7")).isEmpty();
      await().atMost(WAIT).until(() -> services.calls.stream().filter(c -> c.startsWith("add ")).count() == 50
          && slices.calls.stream().filter(c -> c.startsWith("add ")).count() == 50);
      assertThat(services.about("bystanders")).isEmpty();
      assertThat(slices.about("bystanders")).isEmpty();
      // what the lists held was seen: the bystanders were listed and dropped, not missed
      assertThat(informers.services().lastSyncResourceVersion()).isNotNull();
    }
  }

  @Test
  void theInformersListInPages() throws Exception {
    client.resource(egressService("default", "web")).create();
    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      informers.start();
      await().atMost(WAIT).until(informers::hasSynced);
    }
    List<String> lists = new ArrayList<>();
    for (int i = 0; i < 1000; i++) {
      RecordedRequest r = server.takeRequest(100, TimeUnit.MILLISECONDS);
      if (r == null) {
        break;
      }
      if (r.getMethod().equals("GET") && !r.getPath().contains("watch=true")) {
        lists.add(r.getPath());
      }
    }
    assertThat(lists).hasSize(4).allSatisfy(path -> assertThat(path).contains("limit=" + ClusterInformers.PAGE));
  }

  @Test
  void anEgressServiceCreatedAfterItsServiceBringsItAndItsSlicesAndItsDeletionTakesThemAway() throws Exception {
    createAll(List.of(service("default", "web", "172.30.0.10"), slice("default", "web", "web-a", "10.128.0.5"),
        slice("default", "web", "web-b", "10.128.0.6"), service("default", "other", "172.30.0.11"),
        slice("default", "other", "other-a", "10.128.0.7")));
    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      Recorder<Service> services = new Recorder<>();
      Recorder<EndpointSlice> slices = new Recorder<>();
      informers.addEventHandler(Service.class, services);
      informers.addEventHandler(EndpointSlice.class, slices);
      informers.start();
      await().atMost(WAIT).until(informers::hasSynced);
      assertThat(informers.snapshot().services()).isEmpty();
      assertThat(informers.snapshot().endpointSlices()).isEmpty();

      client.resource(egressService("default", "web")).create();

      await().atMost(WAIT).untilAsserted(() -> {
        assertThat(informers.service("default", "web")).isPresent();
        assertThat(informers.endpointSlicesOf("default", "web")).hasSize(2);
      });
      await().atMost(WAIT).untilAsserted(() -> {
        assertThat(services.calls).containsExactly("add Service default/web");
        assertThat(slices.calls).containsExactlyInAnyOrder("add EndpointSlice default/web-a",
            "add EndpointSlice default/web-b");
      });
      assertThat(informers.snapshot().services()).hasSize(1);

      client.resource(egressService("default", "web")).delete();

      await().atMost(WAIT).untilAsserted(() -> {
        assertThat(informers.service("default", "web")).isEmpty();
        assertThat(informers.endpointSlicesOf("default", "web")).isEmpty();
        assertThat(informers.snapshot().endpointSlices()).isEmpty();
        assertThat(services.calls).containsExactly("add Service default/web", "delete Service default/web");
        assertThat(slices.calls).hasSize(4).contains("delete EndpointSlice default/web-a",
            "delete EndpointSlice default/web-b");
      });
      assertThat(informers.backfillsDone()).isTrue();
    }
  }

  @Test
  void updatesOfWantedObjectsReachTheHandlersAndChurnOfTheOthersReachesNone() throws Exception {
    createAll(List.of(egressService("default", "web"), service("default", "web", "172.30.0.10"),
        slice("default", "web", "web-a", "10.128.0.5"), service("default", "other", "172.30.0.11"),
        slice("default", "other", "other-a", "10.128.0.7")));
    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      Recorder<Service> services = new Recorder<>();
      Recorder<EndpointSlice> slices = new Recorder<>();
      informers.addEventHandler(Service.class, services);
      informers.addEventHandler(EndpointSlice.class, slices);
      informers.start();
      await().atMost(WAIT).until(informers::hasSynced);

      for (int i = 0; i < 5; i++) {
        String address = "10.128.9." + i;
        client.discovery().v1().endpointSlices().inNamespace("default").withName("other-a").edit(s -> {
          s.getEndpoints().get(0).setAddresses(List.of(address));
          return s;
        });
        client.services().inNamespace("default").withName("other").edit(s -> {
          s.getMetadata().setLabels(java.util.Map.of("churn", address));
          return s;
        });
      }
      client.services().inNamespace("default").withName("other").delete();
      client.discovery().v1().endpointSlices().inNamespace("default").withName("web-a").edit(s -> {
        s.getEndpoints().get(0).setAddresses(List.of("10.128.0.9"));
        return s;
      });
      client.services().inNamespace("default").withName("web").edit(s -> {
        s.getSpec().setClusterIP("172.30.0.20");
        return s;
      });

      await().atMost(WAIT).untilAsserted(() -> {
        assertThat(services.calls).containsExactly("add Service default/web", "update Service default/web");
        assertThat(slices.calls).containsExactly("add EndpointSlice default/web-a", "update EndpointSlice default/web-a");
      });
      assertThat(informers.service("default", "web").orElseThrow().getSpec().getClusterIP()).isEqualTo("172.30.0.20");
      assertThat(informers.endpointSlicesOf("default", "web").get(0).getEndpoints().get(0).getAddresses())
          .containsExactly("10.128.0.9");
      assertThat(informers.service("default", "other")).isEmpty();
    }
  }

  @Test
  void aHandlerRegisteredAfterTheStartGetsWhatIsCachedAsAddsThenTheChanges() throws Exception {
    createAll(List.of(egressService("default", "web"), service("default", "web", "172.30.0.10"),
        service("default", "other", "172.30.0.11")));
    try (ClusterInformers informers = ClusterInformers.create(client, Duration.ZERO)) {
      informers.start();
      await().atMost(WAIT).until(informers::hasSynced);
      Recorder<Service> late = new Recorder<>();
      informers.addEventHandler(Service.class, late);
      client.services().inNamespace("default").withName("web").edit(s -> {
        s.getSpec().setClusterIP("172.30.0.20");
        return s;
      });
      await().atMost(WAIT).untilAsserted(() ->
          assertThat(late.calls).containsExactly("add Service default/web", "update Service default/web"));
    }
  }
}

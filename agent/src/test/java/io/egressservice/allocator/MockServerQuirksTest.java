package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import io.fabric8.kubernetes.api.model.coordination.v1.LeaseBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.KubernetesClientException;
import io.fabric8.kubernetes.client.dsl.base.PatchContext;
import io.fabric8.kubernetes.client.dsl.base.PatchType;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;
import org.ovn.k8s.v1.EgressServiceStatus;

/**
 * What fabric8's mock API server (CRUD mode, 7.5.2) does differently from a real one, in the places the allocator
 * relies on. If one of these starts failing after an upgrade, the workaround noted here may be dropped.
 */
@EnableKubernetesMockClient(crud = true)
class MockServerQuirksTest {
  KubernetesClient client;

  private EgressService es(String name, String host) {
    EgressService e = new EgressService();
    e.getMetadata().setNamespace("ns");
    e.getMetadata().setName(name);
    EgressServiceSpec spec = new EgressServiceSpec();
    spec.setNetwork("100");
    e.setSpec(spec);
    EgressServiceStatus st = new EgressServiceStatus();
    st.setHost(host);
    e.setStatus(st);
    return e;
  }

  private EgressService get(String name) {
    return client.resources(EgressService.class).inNamespace("ns").withName(name).get();
  }

  @Test
  void statusIsASubresourceOnlyOnceTheCrdIsRegistered() {
    // Without the CRD: create keeps status and a main-resource PUT overwrites it (a real server ignores both).
    client.resource(es("before", "node1")).create();
    assertThat(get("before").getStatus().getHost()).isEqualTo("node1");
    EgressService b = get("before");
    b.getStatus().setHost("node2");
    client.resource(b).update();
    assertThat(get("before").getStatus().getHost()).isEqualTo("node2");

    // Workaround used by the tests: create the CRD (crds/) in the mock first; then status behaves.
    new MockCluster(client).crd();
    client.resource(es("after", "node1")).create();
    assertThat(get("after").getStatus()).isNull();
    EgressService a = get("after");
    a.setStatus(new EgressServiceStatus());
    a.getStatus().setHost("node1");
    a.getSpec().setNetwork("ignored-by-status-put");
    client.resource(a).updateStatus();
    assertThat(get("after").getStatus().getHost()).isEqualTo("node1");
    assertThat(get("after").getSpec().getNetwork()).isEqualTo("100");
    EgressService main = get("after");
    main.getStatus().setHost("ignored-by-main-put");
    client.resource(main).update();
    assertThat(get("after").getStatus().getHost()).isEqualTo("node1");
  }

  @Test
  void statusPutIgnoresAStaleResourceVersion() {
    new MockCluster(client).crd();
    client.resource(es("x", "")).create();
    EgressService stale = get("x");
    stale.setStatus(new EgressServiceStatus());
    stale.getStatus().setHost("node1");
    client.resource(stale).updateStatus();
    // A real server answers 409 Conflict here; the mock accepts it. So the allocator's conflict retry is
    // exercised with an injected 409 instead (AllocatorMockServerTest).
    stale.getStatus().setHost("node2");
    client.resource(stale).updateStatus();
    assertThat(get("x").getStatus().getHost()).isEqualTo("node2");
    // main-resource PUT does check it
    stale.getSpec().setNetwork("200");
    assertThatThrownBy(() -> client.resource(stale).update())
        .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
  }

  @Test
  void jsonMergePatchNullStoresNullInsteadOfRemovingTheKey() {
    client.resource(new NodeBuilder().withNewMetadata().withName("n").addToLabels("keep", "x")
        .addToLabels("gone", "").endMetadata().build()).create();
    client.nodes().withName("n").patch(PatchContext.of(PatchType.JSON_MERGE),
        "{\"metadata\":{\"labels\":{\"gone\":null,\"new\":\"\"}}}");
    Map<String, String> labels = client.nodes().withName("n").get().getMetadata().getLabels();
    // RFC 7386 (and the API server) delete "gone"; the mock keeps it with a null value. The allocator reads a
    // null-valued label as absent (NodeState), and the tests check labels the same way (MockCluster.labels).
    assertThat(labels).containsEntry("keep", "x").containsEntry("new", "").containsKey("gone");
    assertThat(labels.get("gone")).isNull();
  }

  @Test
  void leaseWritesAreOptimisticallyLocked() {
    Lease created = client.resource(new LeaseBuilder().withNewMetadata().withName("l").withNamespace("ns")
        .endMetadata().withNewSpec().withHolderIdentity("a").endSpec().build()).create();
    Lease fresh = client.resource(created).get();
    fresh.getSpec().setHolderIdentity("b");
    client.resource(fresh).update();
    created.getSpec().setHolderIdentity("c");
    assertThatThrownBy(() -> client.resource(created).update())
        .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
    assertThatThrownBy(() -> client.resource(new LeaseBuilder().withNewMetadata().withName("l").withNamespace("ns")
        .endMetadata().build()).create())
        .isInstanceOfSatisfying(KubernetesClientException.class, e -> assertThat(e.getCode()).isEqualTo(409));
  }
}

package io.egressservice.informers;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.allocator.AllocatorInputs;
import io.egressservice.allocator.NodeState;
import io.egressservice.controller.AgentSerialization;
import io.egressservice.objects.PlanInputs;
import io.egressservice.plan.EndpointSliceInfo;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.KubernetesList;
import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Service;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.util.List;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;

/**
 * The lean copies against objects as a real cluster returns them (src/test/resources/informers): every
 * reader of cached objects gets the same inputs from the copy as from the full object. A reader of a field
 * that the copy drops fails here, as long as the fixtures populate that field.
 */
class LeanObjectsTest {
  private static final KubernetesSerialization JSON = AgentSerialization.create();

  static <T extends HasMetadata> List<T> fixture(String file, Class<T> type) {
    try (InputStream in = LeanObjectsTest.class.getResourceAsStream("/informers/" + file)) {
      KubernetesList list = JSON.unmarshal(in, KubernetesList.class);
      return list.getItems().stream().map(type::cast).toList();
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  static List<Service> services() {
    return fixture("services.yaml", Service.class);
  }

  static List<EndpointSlice> slices() {
    return fixture("endpointslices.yaml", EndpointSlice.class);
  }

  static List<Node> nodes() {
    return fixture("nodes.yaml", Node.class);
  }

  static List<EgressService> egressServices() {
    return fixture("egressservices.yaml", EgressService.class);
  }

  @Test
  void theFixturesExerciseWhatTheReadersLookAt() {
    assertThat(services()).extracting(s -> PlanInputs.service(s).ingress().size()).containsExactly(3, 0);
    assertThat(PlanInputs.service(services().get(0)).nodePorts()).containsExactly(30443, 30080);
    assertThat(PlanInputs.service(services().get(0)).externalTrafficPolicy()).isEqualTo("Local");
    assertThat(slices()).extracting(s -> PlanInputs.slice(s).endpoints().size()).containsExactly(4, 4);
    List<NodeState> nodes = nodes().stream().map(AllocatorInputs::node).toList();
    assertThat(nodes).extracting(NodeState::ready).containsExactly(true, false);
    assertThat(nodes).extracting(NodeState::unschedulable).containsExactly(false, true);
    assertThat(nodes).extracting(NodeState::deleting).containsExactly(false, true);
    assertThat(nodes.get(0).labels()).containsKey("egress-service.k8s.ovn.org/shop-web");
    assertThat(egressServices()).extracting(es -> AllocatorInputs.egressService(es).nodeSelector().isPresent())
        .containsExactly(true, false);
  }

  @Test
  void servicesGiveThePlanTheSameInputs() {
    for (Service full : services()) {
      assertThat(PlanInputs.service(LeanObjects.service(full))).isEqualTo(PlanInputs.service(full));
      assertThat(PlanInputs.ref(LeanObjects.service(full))).isEqualTo(PlanInputs.ref(full));
    }
  }

  @Test
  void endpointSlicesGiveThePlanAndTheEventFilterTheSameInputs() {
    for (EndpointSlice full : slices()) {
      EndpointSlice lean = LeanObjects.endpointSlice(full);
      assertThat(PlanInputs.slice(lean)).isEqualTo(PlanInputs.slice(full));
      assertThat(PlanInputs.serviceName(lean)).isEqualTo(PlanInputs.serviceName(full)).isEqualTo("web");
    }
  }

  @Test
  void nodesGiveThePlanAndTheAllocatorTheSameInputs() {
    for (Node full : nodes()) {
      Node lean = LeanObjects.node(full);
      assertThat(PlanInputs.node(lean)).isEqualTo(PlanInputs.node(full));
      assertThat(AllocatorInputs.node(lean)).isEqualTo(AllocatorInputs.node(full));
    }
  }

  @Test
  void egressServicesGiveThePlanAndTheAllocatorTheSameInputs() {
    for (EgressService full : egressServices()) {
      EgressService lean = LeanObjects.egressService(full);
      assertThat(PlanInputs.egressService(lean)).isEqualTo(PlanInputs.egressService(full));
      assertThat(AllocatorInputs.egressService(lean)).isEqualTo(AllocatorInputs.egressService(full));
    }
  }

  @Test
  void anEgressServiceKeepsWhatAStatusWriteAndAnEventReferToAndLosesOnlyManagedFieldsAndAnnotations() {
    for (EgressService full : egressServices()) {
      EgressService lean = LeanObjects.egressService(full);
      assertThat(lean.getApiVersion()).isEqualTo("k8s.ovn.org/v1");
      assertThat(lean.getKind()).isEqualTo("EgressService");
      assertThat(lean.getMetadata().getUid()).isEqualTo(full.getMetadata().getUid());
      assertThat(lean.getMetadata().getResourceVersion()).isEqualTo(full.getMetadata().getResourceVersion());
      assertThat(lean.getMetadata().getManagedFields()).isNullOrEmpty();
      assertThat(lean.getMetadata().getAnnotations()).isNullOrEmpty();

      // what the allocator's status write sends is the full object but for those two
      EgressService expected = JSON.clone(full);
      expected.getMetadata().setManagedFields(null);
      expected.getMetadata().setAnnotations(null);
      assertThat(JSON.asJson(JSON.clone(lean))).isEqualTo(JSON.asJson(expected));
    }
  }

  @Test
  void theCopiesDropWhatNoReaderLooksAt() {
    Node node = LeanObjects.node(nodes().get(0));
    assertThat(node.getStatus().getImages()).isNullOrEmpty();
    assertThat(node.getStatus().getNodeInfo()).isNull();
    assertThat(node.getStatus().getCapacity()).isNullOrEmpty();
    assertThat(node.getStatus().getConditions()).allSatisfy(c -> {
      assertThat(c.getMessage()).isNull();
      assertThat(c.getLastHeartbeatTime()).isNull();
    });
    assertThat(node.getMetadata().getAnnotations()).isNullOrEmpty();
    assertThat(node.getMetadata().getManagedFields()).isNullOrEmpty();

    EndpointSlice slice = LeanObjects.endpointSlice(slices().get(0));
    assertThat(slice.getMetadata().getLabels()).isEqualTo(Map.of(PlanInputs.SERVICE_NAME_LABEL, "web",
        EndpointSliceInfo.MANAGED_BY_LABEL, EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER));
    assertThat(slice.getMetadata().getOwnerReferences()).isNullOrEmpty();
    assertThat(slice.getPorts()).isNullOrEmpty();
    assertThat(slice.getEndpoints()).allSatisfy(e -> {
      assertThat(e.getConditions()).isNull();
      // endpoint trust reads a targetRef only when it is a Pod of another namespace; these are the Service's own
      assertThat(e.getTargetRef()).isNull();
      assertThat(e.getZone()).isNull();
    });

    Service service = LeanObjects.service(services().get(0));
    // The node ports stay (OVN-Kubernetes' ETP=Local rule), nothing else of a port.
    assertThat(service.getSpec().getPorts()).extracting(p -> p.getNodePort() + " " + p.getPort() + " " + p.getName())
        .containsExactly("30443 null null", "30080 null null");
    assertThat(service.getSpec().getSessionAffinity()).isNull();
    assertThat(service.getStatus().getConditions()).isNullOrEmpty();
    assertThat(service.getMetadata().getFinalizers()).isNullOrEmpty();
  }

  @Test
  void theFullObjectIsLeftAsItWas() {
    // fabric8 hands the object it stored a copy of to the event handlers afterwards
    Node node = nodes().get(0);
    String before = JSON.asJson(node);
    LeanObjects.node(node);
    assertThat(JSON.asJson(node)).isEqualTo(before);

    EgressService es = egressServices().get(0);
    String esBefore = JSON.asJson(es);
    LeanObjects.egressService(es);
    assertThat(JSON.asJson(es)).isEqualTo(esBefore);
  }

  @Test
  void theLeanCopiesAreAFractionOfTheSize() {
    long[] svc = sizes(services(), LeanObjects::service);
    long[] eps = sizes(slices(), LeanObjects::endpointSlice);
    long[] node = sizes(nodes(), LeanObjects::node);
    long[] es = sizes(egressServices(), LeanObjects::egressService);
    System.out.printf("serialized bytes, full -> lean: Services %d -> %d, EndpointSlices %d -> %d, Nodes %d -> %d,"
        + " EgressServices %d -> %d%n", svc[0], svc[1], eps[0], eps[1], node[0], node[1], es[0], es[1]);
    assertThat(svc[1] * 3).isLessThan(svc[0]); // the selector is kept: endpoint trust reads whether there is one
    assertThat(eps[1] * 4).isLessThan(eps[0]);
    assertThat(node[1] * 6).isLessThan(node[0]);
    assertThat(es[1] * 2).isLessThan(es[0]);
  }

  private static <T extends HasMetadata> long[] sizes(List<T> objects, Function<T, T> lean) {
    long full = 0;
    long small = 0;
    for (T o : objects) {
      full += JSON.asJson(o).length();
      small += JSON.asJson(lean.apply(o)).length();
    }
    return new long[] {full, small};
  }
}

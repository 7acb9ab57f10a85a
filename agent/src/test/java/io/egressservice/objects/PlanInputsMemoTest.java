package io.egressservice.objects;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.plan.NetworkResolution;
import io.egressservice.plan.NodeInputs;
import io.egressservice.model.PlanConfig;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointBuilder;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSlice;
import io.fabric8.kubernetes.api.model.discovery.v1.EndpointSliceBuilder;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressService;
import org.ovn.k8s.v1.EgressServiceSpec;

class PlanInputsMemoTest {
  private static EndpointSlice slice(String name, String address) {
    return new EndpointSliceBuilder()
        .withNewMetadata().withName(name).withNamespace("ns").addToLabels(PlanInputs.SERVICE_NAME_LABEL, "web")
        .endMetadata()
        .withAddressType("IPv4")
        .withEndpoints(new EndpointBuilder().withAddresses(address).withNodeName("node-a").build())
        .build();
  }

  private static NodeInputs inputs(PlanInputs.Memo memo, List<EgressService> es, List<EndpointSlice> slices) {
    return PlanInputs.of("node-a", new ClusterObjects(es, List.of(), slices, List.of()), List.of(),
        NetworkResolution.offlineResolution(), PlanConfig.defaults(), Map.of(), memo);
  }

  @Test
  void anUnchangedObjectIsNotConvertedAgainAndAReplacedOneIs() {
    PlanInputs.Memo memo = PlanInputs.Memo.forImmutableObjects();
    EgressService es = EgressServices.of("ns", "web", EgressServiceSpec.SourceIPBy.LOADBALANCERIP, "", "node-a");
    es.getMetadata().setCreationTimestamp("2026-12-01T10:00:00Z");
    EndpointSlice a = slice("web-a", "10.128.0.1");
    EndpointSlice b = slice("web-b", "10.128.0.2");
    NodeInputs first = inputs(memo, List.of(es), List.of(a, b));

    EndpointSlice bReplaced = slice("web-b", "10.128.0.3"); // an informer update: a new object
    NodeInputs second = inputs(memo, List.of(es), List.of(a, bReplaced));

    assertThat(second.egressServices().get(0)).isSameAs(first.egressServices().get(0));
    assertThat(second.endpointSlices().get(0)).isSameAs(first.endpointSlices().get(0));
    assertThat(second.endpointSlices().get(1).endpoints().get(0).addresses()).containsExactly("10.128.0.3");
    assertThat(second).isEqualTo(inputs(PlanInputs.Memo.none(), List.of(es), List.of(a, bReplaced)));
  }

  @Test
  void onlyTheObjectsOfTheLastConversionAreRemembered() {
    PlanInputs.Memo memo = PlanInputs.Memo.forImmutableObjects();
    EndpointSlice a = slice("web-a", "10.128.0.1");
    NodeInputs first = inputs(memo, List.of(), List.of(a));
    inputs(memo, List.of(), List.of()); // a deleted: forgotten
    NodeInputs again = inputs(memo, List.of(), List.of(a));

    assertThat(again.endpointSlices().get(0)).isEqualTo(first.endpointSlices().get(0))
        .isNotSameAs(first.endpointSlices().get(0));
  }

  @Test
  void withoutMemoryAnObjectMutatedInPlaceIsSeen() {
    PlanInputs.Memo memo = PlanInputs.Memo.none();
    EndpointSlice a = slice("web-a", "10.128.0.1");
    inputs(memo, List.of(), List.of(a));
    a.getEndpoints().get(0).setAddresses(List.of("10.128.0.9"));

    assertThat(inputs(memo, List.of(), List.of(a)).endpointSlices().get(0).endpoints().get(0).addresses())
        .containsExactly("10.128.0.9");
  }
}

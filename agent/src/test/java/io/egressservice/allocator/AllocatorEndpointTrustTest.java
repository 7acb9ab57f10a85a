package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.EndpointTrust;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Endpoint trust, the allocator's side: a hand-made slice must not draw a selector-less Service's host to
 * the node of another namespace's pod (where the node agents would then refuse it anyway).
 */
class AllocatorEndpointTrustTest {
  static final ObjectRef GRAB = new ObjectRef("evil", "grab");

  static NodeState node(String name) {
    return new NodeState(name, Map.of(), true, false, false, List.of(), List.of());
  }

  static ServiceInfo selectorless() {
    return new ServiceInfo(GRAB, "LoadBalancer", List.of(), List.of(new ServiceInfo.Ingress("6.6.6.6", "")), false,
        Optional.empty());
  }

  static EndpointSliceInfo slice(String manager) {
    return new EndpointSliceInfo(new ObjectRef("evil", "grab-1"), "grab", "IPv4", manager,
        List.of(new EndpointSliceInfo.Endpoint(List.of("10.128.1.7"), Optional.of("n2"))));
  }

  static Decision decide(EndpointSliceInfo slice, EndpointTrust trust) {
    return AllocationPass.compute(
        List.of(new EgressServiceState(GRAB, SourceIpBy.LOAD_BALANCER_IP, Optional.empty(), "", true)),
        List.of(selectorless()), List.of(slice), List.of(node("n1"), node("n2")), trust)
        .decision(GRAB).orElseThrow();
  }

  @Test
  void untrustedEndpointsMakeNoNodeACandidate() {
    Decision d = decide(slice("evil-controller"), EndpointTrust.kubernetesOnly());

    assertThat(d.reason()).isEqualTo(Reason.NO_HOST_AVAILABLE);
    assertThat(d.host()).isEmpty();
    assertThat(d.message()).contains("no pod-network endpoints")
        .contains("(refused: EndpointSlice evil/grab-1 is managed by 'evil-controller'");
  }

  @Test
  void aForgedEndpointSliceControllerLabelMakesNoNodeACandidate() {
    assertThat(decide(slice(EndpointSliceInfo.ENDPOINTSLICE_CONTROLLER), EndpointTrust.kubernetesOnly()).reason())
        .isEqualTo(Reason.NO_HOST_AVAILABLE);
  }

  @Test
  void endpointsOfAManagerTheAdminTrustsMakeTheirNodeTheHost() {
    Decision d = decide(slice("kube-vip"), new EndpointTrust(Set.of("kube-vip")));

    assertThat(d.reason()).isEqualTo(Reason.HOST_ALLOCATED);
    assertThat(d.host()).isEqualTo("n2");
  }
}

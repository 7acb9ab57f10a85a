package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** The whole-cluster pass: load spreading and label changes; no server. */
class AllocationPassTest {
  private static NodeState node(String name, Map<String, String> labels) {
    return new NodeState(name, labels, true, false, false, List.of(), List.of());
  }

  private static EgressServiceState lbip(String name, String host) {
    return new EgressServiceState(new ObjectRef("ns", name), SourceIpBy.LOAD_BALANCER_IP, Optional.empty(), host,
        true);
  }

  private static ServiceInfo lb(String name) {
    return new ServiceInfo(new ObjectRef("ns", name), "LoadBalancer", List.of(),
        List.of(new ServiceInfo.Ingress("203.0.113.1", "")));
  }

  /** One pod endpoint of {@code svc} on each of {@code nodes}. */
  private static EndpointSliceInfo slice(String svc, String... nodes) {
    return new EndpointSliceInfo(new ObjectRef("ns", svc + "-x"), svc, "IPv4",
        java.util.Arrays.stream(nodes)
            .map(n -> new EndpointSliceInfo.Endpoint(List.of("10.128.0." + n.length()), Optional.of(n))).toList());
  }

  @Test
  void servicesSpreadOverNodesByLoadDeterministically() {
    var result = AllocationPass.compute(
        List.of(lbip("c", ""), lbip("a", ""), lbip("b", "")),
        List.of(lb("a"), lb("b"), lb("c")),
        List.of(slice("a", "n1", "n2"), slice("b", "n1", "n2"), slice("c", "n1", "n2")),
        List.of(node("n1", Map.of()), node("n2", Map.of())));
    assertThat(result.decisions()).extracting(d -> d.ref().name() + "=" + d.host())
        .containsExactly("a=n1", "b=n2", "c=n1");
  }

  @Test
  void existingAllocationsCountAsLoad() {
    var result = AllocationPass.compute(
        List.of(lbip("a", "n1"), lbip("b", "")),
        List.of(lb("a"), lb("b")),
        List.of(slice("a", "n1", "n2"), slice("b", "n1", "n2")),
        List.of(node("n1", Map.of()), node("n2", Map.of())));
    assertThat(result.decision(new ObjectRef("ns", "b")).orElseThrow().host()).isEqualTo("n2");
  }

  @Test
  void labelsFollowTheHostOthersUntouchedStrayRemoved() {
    var result = AllocationPass.compute(
        List.of(lbip("a", "n1")),
        List.of(lb("a")),
        List.of(slice("a", "n2")),
        List.of(
            node("n1", Map.of("egress-service.k8s.ovn.org/ns-a", "", "unrelated", "x")),
            node("n2", Map.of("egress-service.k8s.ovn.org/ns-deleted", "", "unrelated", "y")),
            node("n3", Map.of("unrelated", "z"))));
    assertThat(result.decision(new ObjectRef("ns", "a")).orElseThrow().host()).isEqualTo("n2");
    assertThat(result.labelChanges()).isEqualTo(Map.of(
        "n1", Map.of("egress-service.k8s.ovn.org/ns-a", false),
        "n2", Map.of("egress-service.k8s.ovn.org/ns-a", true, "egress-service.k8s.ovn.org/ns-deleted", false)));
  }

  @Test
  void convergedClusterNeedsNoChanges() {
    var result = AllocationPass.compute(
        List.of(lbip("a", "n2"),
            new EgressServiceState(new ObjectRef("ns", "net"), SourceIpBy.NETWORK, Optional.empty(), "ALL", true)),
        List.of(lb("a")),
        List.of(slice("a", "n1", "n2")),
        List.of(node("n1", Map.of()), node("n2", Map.of("egress-service.k8s.ovn.org/ns-a", ""))));
    assertThat(result.decisions()).extracting(Decision::host).containsExactly("n2", "ALL");
    assertThat(result.labelChanges()).isEmpty();
  }
}

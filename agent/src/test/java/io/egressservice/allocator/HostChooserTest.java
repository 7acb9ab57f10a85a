package io.egressservice.allocator;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.plan.EndpointSliceInfo;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.ServiceInfo;
import io.egressservice.plan.SourceIpBy;
import io.fabric8.kubernetes.api.model.LabelSelector;
import io.fabric8.kubernetes.api.model.LabelSelectorBuilder;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** The pure host choice; no server. Node i has address 192.168.0.i and pod CIDR 10.128.i.0/24. */
class HostChooserTest {
  private static final ObjectRef ES = new ObjectRef("ns", "svc");

  private final List<NodeState> nodes = new ArrayList<>();
  private final List<EndpointSliceInfo.Endpoint> endpoints = new ArrayList<>();
  private final Map<String, Integer> load = new HashMap<>();
  private Optional<ServiceInfo> service = Optional.of(lb("203.0.113.5"));
  private SourceIpBy mode = SourceIpBy.LOAD_BALANCER_IP;
  private LabelSelector selector;
  private String current = "";

  private static ServiceInfo lb(String... ips) {
    return new ServiceInfo(ES, "LoadBalancer", List.of("172.30.0.10"),
        java.util.Arrays.stream(ips).map(ip -> new ServiceInfo.Ingress(ip, "")).toList());
  }

  private HostChooserTest node(int i, Map<String, String> labels) {
    return node(new NodeState("node" + i, labels, true, false, false, List.of("192.168.0." + i),
        List.of("10.128." + i + ".0/24")));
  }

  private HostChooserTest node(NodeState n) {
    nodes.removeIf(x -> x.name().equals(n.name()));
    nodes.add(n);
    return this;
  }

  private NodeState get(String name) {
    return nodes.stream().filter(n -> n.name().equals(name)).findFirst().orElseThrow();
  }

  /** {@code count} pod endpoints on node i (pod IPs in its pod CIDR). */
  private HostChooserTest pods(int i, int count) {
    for (int k = 0; k < count; k++) {
      endpoints.add(new EndpointSliceInfo.Endpoint(List.of("10.128." + i + "." + (10 + endpoints.size())),
          Optional.of("node" + i)));
    }
    return this;
  }

  private Decision choose() {
    EgressServiceState es = new EgressServiceState(ES, mode, Optional.ofNullable(selector), current, true);
    EndpointSliceInfo slice = new EndpointSliceInfo(new ObjectRef("ns", "svc-abc"), "svc", "IPv4", endpoints);
    return HostChooser.choose(es, service, List.of(slice), nodes, load);
  }

  private HostChooserTest threeNodesWithPods() {
    return node(1, Map.of("zone", "a")).node(2, Map.of("zone", "b")).node(3, Map.of("zone", "c"))
        .pods(1, 1).pods(2, 1).pods(3, 1);
  }

  @Test
  void networkModeIsAllWithoutAnyCheck() {
    mode = SourceIpBy.NETWORK;
    service = Optional.empty();
    Decision d = choose();
    assertThat(d.host()).isEqualTo("ALL");
    assertThat(d.reason()).isEqualTo(Reason.ALL_NODES);
    assertThat(d.labelKey()).isEmpty();
  }

  @Test
  void hostChosenAmongValidNodesOnly() {
    threeNodesWithPods();
    node(new NodeState("node1", Map.of(), false, false, false, List.of("192.168.0.1"), List.of("10.128.1.0/24")));
    node(new NodeState("node2", Map.of(), true, true, false, List.of("192.168.0.2"), List.of("10.128.2.0/24")));
    Decision d = choose();
    assertThat(d.host()).isEqualTo("node3");
    assertThat(d.reason()).isEqualTo(Reason.HOST_ALLOCATED);
    assertThat(d.labelKey()).contains("egress-service.k8s.ovn.org/ns-svc");
  }

  @Test
  void nodeSelectorMatchLabelsHonoured() {
    threeNodesWithPods();
    selector = new LabelSelectorBuilder().addToMatchLabels("zone", "b").build();
    assertThat(choose().host()).isEqualTo("node2");
  }

  @Test
  void nodeSelectorMatchExpressionsHonoured() {
    node(1, Map.of("zone", "a", "gw", "yes")).node(2, Map.of("zone", "b")).node(3, Map.of("zone", "c", "gw", "no"))
        .node(4, Map.of("zone", "d", "gw", "yes", "drain", "")).pods(1, 1).pods(2, 1).pods(3, 1).pods(4, 1);
    selector = new LabelSelectorBuilder()
        .addNewMatchExpression().withKey("zone").withOperator("NotIn").withValues("a").endMatchExpression()
        .addNewMatchExpression().withKey("gw").withOperator("Exists").endMatchExpression()
        .addNewMatchExpression().withKey("drain").withOperator("DoesNotExist").endMatchExpression()
        .build();
    assertThat(choose().host()).isEqualTo("node3");
    selector = new LabelSelectorBuilder()
        .addNewMatchExpression().withKey("zone").withOperator("In").withValues("b", "d").endMatchExpression()
        .build();
    assertThat(choose().host()).isEqualTo("node2");
  }

  @Test
  void selectorMatchingNoNodeGivesNoHostWithReason() {
    threeNodesWithPods();
    selector = new LabelSelectorBuilder().addToMatchLabels("zone", "z").build();
    Decision d = choose();
    assertThat(d.host()).isEmpty();
    assertThat(d.reason()).isEqualTo(Reason.NO_HOST_AVAILABLE);
    assertThat(d.message()).contains("not matching nodeSelector node1, node2, node3");
  }

  @ParameterizedTest(name = "invalid selector {0} -> no host, no exception")
  @CsvSource(delimiter = '|', value = {
      "matchLabels a:b=c&", "In without values", "Exists with values", "unknown operator", "key too long"})
  void invalidSelectorGivesNoHostAndReason(String which) {
    threeNodesWithPods();
    selector = switch (which) {
      case "matchLabels a:b=c&" -> new LabelSelectorBuilder().addToMatchLabels("a:b", "c&").build();
      case "In without values" -> new LabelSelectorBuilder()
          .addNewMatchExpression().withKey("zone").withOperator("In").endMatchExpression().build();
      case "Exists with values" -> new LabelSelectorBuilder()
          .addNewMatchExpression().withKey("zone").withOperator("Exists").withValues("a").endMatchExpression().build();
      case "unknown operator" -> new LabelSelectorBuilder()
          .addNewMatchExpression().withKey("zone").withOperator("Gt").withValues("1").endMatchExpression().build();
      default -> new LabelSelectorBuilder().addToMatchLabels("k".repeat(64), "v").build();
    };
    Decision d = choose();
    assertThat(d.host()).isEmpty();
    assertThat(d.reason()).isEqualTo(Reason.INVALID_NODE_SELECTOR);
    assertThat(d.message()).startsWith("invalid nodeSelector: ");
  }

  @Test
  void currentHostKeptWhenEndpointsScale() {
    threeNodesWithPods();
    current = "node2";
    assertThat(choose().host()).isEqualTo("node2");
    pods(1, 5).pods(3, 4); // other nodes now have more endpoints: no flapping
    Decision d = choose();
    assertThat(d.host()).isEqualTo("node2");
    assertThat(d.message()).startsWith("kept node node2");
  }

  @ParameterizedTest(name = "current host moved when it {0}")
  @CsvSource({"goes NotReady", "is cordoned (OVN-K keeps cordoned nodes)", "is being deleted",
      "loses its last endpoint", "stops matching the selector"})
  void currentHostMovedWhenNoLongerCandidate(String what) {
    node(1, Map.of("gw", "")).node(2, Map.of("gw", "")).node(3, Map.of("gw", "")).pods(1, 1).pods(3, 2);
    selector = new LabelSelectorBuilder().addNewMatchExpression().withKey("gw").withOperator("Exists")
        .endMatchExpression().build();
    current = "node1";
    assertThat(choose().host()).isEqualTo("node1");
    NodeState n1 = get("node1");
    switch (what.split(" ")[0] + " " + what.split(" ")[1]) {
      case "goes NotReady" -> node(new NodeState("node1", n1.labels(), false, false, false, n1.addresses(),
          n1.podCidrs()));
      case "is cordoned" -> node(new NodeState("node1", n1.labels(), true, true, false, n1.addresses(),
          n1.podCidrs()));
      case "is being" -> node(new NodeState("node1", n1.labels(), true, false, true, n1.addresses(), n1.podCidrs()));
      case "loses its" -> endpoints.removeIf(e -> e.nodeName().equals(Optional.of("node1")));
      default -> node(1, Map.of());
    }
    assertThat(choose().host()).isEqualTo("node3");
  }

  @Test
  void endpointsRequiredOnHostUnlikeOvnKubernetes() {
    node(1, Map.of()).node(2, Map.of()).pods(2, 1);
    assertThat(choose().host()).isEqualTo("node2");
    endpoints.clear();
    Decision d = choose();
    assertThat(d.host()).isEmpty();
    assertThat(d.reason()).isEqualTo(Reason.NO_HOST_AVAILABLE);
    assertThat(d.message()).contains("no pod-network endpoints on any node");
  }

  @Test
  void hostNetworkEndpointsDoNotMakeANodeEligible() {
    node(1, Map.of()).node(2, Map.of()).pods(2, 1);
    // node1 "hosts" a host-network endpoint (its own address) and one outside every pod CIDR
    endpoints.add(new EndpointSliceInfo.Endpoint(List.of("192.168.0.1"), Optional.of("node1")));
    endpoints.add(new EndpointSliceInfo.Endpoint(List.of("198.51.100.7"), Optional.of("node1")));
    endpoints.add(new EndpointSliceInfo.Endpoint(List.of("192.168.0.1"), Optional.of("node1")));
    assertThat(choose().host()).isEqualTo("node2");
    // an endpoint without nodeName counts nowhere
    endpoints.add(new EndpointSliceInfo.Endpoint(List.of("10.128.1.50"), Optional.empty()));
    assertThat(choose().host()).isEqualTo("node2");
  }

  @Test
  void deterministicTieBreaksMostEndpointsThenFewestServicesThenName() {
    node(3, Map.of()).node(1, Map.of()).node(2, Map.of()).pods(1, 1).pods(2, 1).pods(3, 1);
    assertThat(choose().host()).as("all equal: smallest name").isEqualTo("node1");
    load.put("node1", 2);
    load.put("node2", 1);
    assertThat(choose().host()).as("fewest services allocated").isEqualTo("node3");
    pods(1, 1);
    assertThat(choose().host()).as("most endpoints wins over load").isEqualTo("node1");
    Decision again = choose();
    assertThat(again).isEqualTo(choose());
  }

  @Test
  void noIngressIpGivesNoHost() {
    threeNodesWithPods();
    service = Optional.of(new ServiceInfo(ES, "LoadBalancer", List.of("172.30.0.10"),
        List.of(new ServiceInfo.Ingress("", "lb.example.com"))));
    Decision d = choose();
    assertThat(d.host()).isEmpty();
    assertThat(d.reason()).isEqualTo(Reason.NO_INGRESS_IP);
    service = Optional.of(lb());
    assertThat(choose().reason()).isEqualTo(Reason.NO_INGRESS_IP);
  }

  @Test
  void notLoadBalancerGivesNoHost() {
    threeNodesWithPods();
    service = Optional.of(new ServiceInfo(ES, "ClusterIP", List.of("172.30.0.10"), List.of()));
    Decision d = choose();
    assertThat(d.host()).isEmpty();
    assertThat(d.reason()).isEqualTo(Reason.NOT_LOAD_BALANCER);
    assertThat(d.message()).contains("ClusterIP");
  }

  @Test
  void missingServiceGivesNoHost() {
    threeNodesWithPods();
    service = Optional.empty();
    assertThat(choose().reason()).isEqualTo(Reason.SERVICE_NOT_FOUND);
  }

  @Test
  void labelNameTooLongStillAllocatesAndReportsUnlikeOvnKubernetes() {
    threeNodesWithPods();
    ObjectRef longRef = new ObjectRef("a-namespace-with-a-long-name", "and-a-service-with-a-long-name-too2");
    EgressServiceState es = new EgressServiceState(longRef, mode, Optional.empty(), "", true);
    EndpointSliceInfo slice = new EndpointSliceInfo(new ObjectRef(longRef.namespace(), "x"), longRef.name(), "IPv4",
        endpoints);
    Decision d = HostChooser.choose(es, Optional.of(new ServiceInfo(longRef, "LoadBalancer", List.of(),
        List.of(new ServiceInfo.Ingress("203.0.113.5", "")))), List.of(slice), nodes, load);
    assertThat(d.host()).isEqualTo("node1");
    assertThat(d.reason()).isEqualTo(Reason.HOST_ALLOCATED);
    assertThat(d.labelKey()).isEmpty();
    assertThat(d.labelProblem()).hasValueSatisfying(p -> assertThat(p).contains("1 to 63 characters, is 64"));
  }

  @Test
  void noNodesAtAll() {
    pods(1, 1);
    Decision d = choose();
    assertThat(d.reason()).isEqualTo(Reason.NO_HOST_AVAILABLE);
    assertThat(d.message()).contains("there are no nodes");
  }
}

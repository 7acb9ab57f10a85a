package io.egressservice.explain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.ApiServer;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * {@code explain} on the namespace cluster (source rule mode, one cluster for the class): for each kind of pod, the
 * sentence and the JSON fields, and that the verdict is where a real packet of the pod left (uplink and source).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ExplainSourceModeClusterTest {
  @RegisterExtension
  static final ExplainCluster c = new ExplainCluster("source");

  @Test
  void aPodOnTheHostLeavesThroughTheServiceNetworkWithTheLbIp() {
    for (IpFamily f : IpFamily.values()) {
      String lb = ExplainCluster.WEB_LB.get(f.ordinal());
      String ip = c.cluster.pod("pod-a1").ip(f);
      Seen seen = c.leaves("pod-a1", Addresses.external(f));
      ExplainCluster.Answer a = c.explain("pod-a1", Addresses.external(f));
      assertThat(a.sentence()).isEqualTo(ip + " (shop/pod-a1) leaves node-a through up2 (table 100) as " + lb
          + ", because EgressService shop/web (LoadBalancerIP, network 100)");
      assertThat(a.text()).endsWith(a.sentence() + "\n");
      JsonNode k = a.json().path("kernel");
      assertThat(a.json().path("verdict").asText()).isEqualTo("local");
      assertThat(k.path("table").asLong()).isEqualTo(100);
      assertThat(k.path("rule").asText()).contains("from " + ip).contains("lookup 100");
      assertThat(a.json().path("api").path("claims").get(0).path("host").asText()).isEqualTo("node-a");
      // the kernel's verdict is where the packet went
      assertThat(new Seen(c.uplink(seen).where(), "udp", k.path("snat").asText()))
          .isEqualTo(seen);
      assertThat(c.uplink(seen).device()).isEqualTo(k.path("outputInterface").asText());
      assertThat(c.uplink(seen).node()).isEqualTo(a.json().path("node").asText());
    }
  }

  @Test
  void aSteeredPodIsSteeredToItsHostAndLeavesThereWithTheLbIp() {
    for (IpFamily f : IpFamily.values()) {
      String lb = ExplainCluster.WEB_LB.get(f.ordinal());
      String ip = c.cluster.pod("pod-b1").ip(f);
      Seen seen = c.leaves("pod-b1", Addresses.external(f));
      ExplainCluster.Answer a = c.explain("pod-b1", Addresses.external(f));
      assertThat(a.sentence()).isEqualTo(ip + " (shop/pod-b1) leaves node-b steered to node-a ("
          + Addresses.nodeIp(1, f) + ") over egress-vx and leaves there as " + lb
          + ", because EgressService shop/web (LoadBalancerIP, network 100)");
      JsonNode k = a.json().path("kernel");
      assertThat(a.json().path("verdict").asText()).isEqualTo("steered");
      assertThat(k.path("outputInterface").asText()).isEqualTo("egress-vx");
      assertThat(k.path("steeredToNode").asText()).isEqualTo("node-a");
      assertThat(k.path("snat").isNull()).as("no SNAT on the steering node").isTrue();
      assertThat(c.uplink(seen).node()).as("the node whose uplink saw it").isEqualTo("node-a");
      assertThat(seen.source()).isEqualTo(lb);
    }
  }

  @Test
  void aPodThatDidNotOptInTakesTheMainRouteAndNoRuleOfOursTouchesIt() {
    for (IpFamily f : IpFamily.values()) {
      String ip = c.cluster.pod("pod-b2").ip(f);
      Seen seen = c.leaves("pod-b2", Addresses.external(f));
      ExplainCluster.Answer a = c.explain("pod-b2", Addresses.external(f));
      assertThat(a.sentence()).isEqualTo(ip + " (shop/pod-b2) leaves node-b through up1 (table main); no rule of ours"
          + " touches it: it did not opt in (no Service lists it as an endpoint)");
      JsonNode k = a.json().path("kernel");
      assertThat(a.json().path("verdict").asText()).isEqualTo("not-opted-in");
      assertThat(k.path("rule").isNull()).isTrue();
      assertThat(k.path("snat").isNull()).isTrue();
      assertThat(c.uplink(seen).device()).isEqualTo(k.path("outputInterface").asText());
      assertThat(c.uplink(seen).node()).isEqualTo("node-b");
      assertThat(seen.source()).as("the CNI's masquerade, not ours").isEqualTo(c.uplink(seen).nodeIp(f));
    }
  }

  @Test
  void anInClusterDestinationIsHandedBackByOurThrowRoute() {
    String dest = c.cluster.pod("pod-b2").ip(IpFamily.V4);
    ExplainCluster.Answer a = c.explain("pod-a1", dest);
    assertThat(a.json().path("verdict").asText()).isEqualTo("in-cluster");
    assertThat(a.json().path("kernel").path("thrownBy").asText()).startsWith("throw 10.128.").endsWith("table 100");
    assertThat(a.sentence()).contains("reaches " + dest + " through eth0 (table main) with its own address");
    Probe p = c.cluster.traffic().udp("pod-a1", dest);
    assertThat(p.seen()).containsExactly(new Seen("pod-b2", "udp", c.cluster.pod("pod-a1").ip(IpFamily.V4)));
  }

  @Test
  void aPodWhoseServiceHasNoHostIsHeldAndItsDropsAreCounted() throws Exception {
    c.cluster.api().createLoadBalancer("held", "172.30.0.11", "fd02::11",
        List.of(Addresses.lbIp(6, IpFamily.V4), Addresses.lbIp(6, IpFamily.V6)), List.of(c.cluster.pod("pod-b3")));
    c.cluster.api().applyEgressService("held", SourceIPBy.LOADBALANCERIP, "100", Optional.of("no-such-node"));
    try {
      String ip = c.cluster.pod("pod-b3").ip(IpFamily.V4);
      await().atMost(ExplainCluster.PATIENCE).untilAsserted(() -> assertThat(
          c.explain("pod-b3", Addresses.EXTERNAL_V4).json().path("verdict").asText()).isEqualTo("held"));
      Probe p = c.cluster.traffic().udp("pod-b3", Addresses.EXTERNAL_V4);
      assertThat(p.seen()).as("a held pod's packet reaches no one").isEmpty();
      ExplainCluster.Answer a = c.explain("pod-b3", Addresses.EXTERNAL_V4);
      JsonNode held = a.json().path("kernel").path("held");
      assertThat(held.path("service").asText()).isEqualTo("shop/held");
      assertThat(held.path("droppedPackets").asLong()).as("the drop counter").isPositive();
      assertThat(a.sentence()).startsWith(ip + " (shop/pod-b3) does not leave node-b: its packets out of the cluster"
          + " are dropped (" + held.path("droppedPackets").asLong() + " so far), because EgressService shop/held"
          + " has no host").as("a Service not found before it was created is history").doesNotContain("ServiceNotFound");
      // status on the node shows the held service, its sources and its drop counter
      io.egressservice.cli.InProcess.Result status = io.egressservice.cli.InProcess.run("status", "--netns",
          c.cluster.node("node-b").netns().name(), "--no-api", "-o", "json");
      JsonNode heldByStatus = new com.fasterxml.jackson.databind.ObjectMapper().readTree(status.out()).path("held");
      assertThat(heldByStatus).as(status.out()).hasSize(1);
      assertThat(heldByStatus.get(0).path("service").asText()).isEqualTo("shop/held");
      assertThat(heldByStatus.get(0).path("sources")).extracting(JsonNode::asText)
          .contains(ip, c.cluster.pod("pod-b3").ip(IpFamily.V6));
      assertThat(heldByStatus.get(0).path("droppedPackets").asLong()).isGreaterThanOrEqualTo(held.path("droppedPackets").asLong());
      // from the API, the held service's last change says why it is held
      io.egressservice.cli.InProcess.Result withApi = io.egressservice.cli.InProcess.run("status", "--netns",
          c.cluster.node("node-b").netns().name(), "--kubeconfig", c.cluster.api().kubeconfig().toString(), "--node",
          "node-b", "-o", "json");
      JsonNode change = new com.fasterxml.jackson.databind.ObjectMapper().readTree(withApi.out()).path("held").get(0)
          .path("lastChange");
      assertThat(change.path("time").asText()).as(withApi.out()).isEqualTo(newestEvent("held").time());
      assertThat(change.path("reason").asText()).isIn(newestEvent("held").reasons());
    } finally {
      deleteService("held");
    }
  }

  @Test
  void aPodOfARefusedEgressServiceIsUntouchedAndExplainGivesTheRefusal() {
    // another Node's address cannot be an egress source: the agents refuse the service
    c.cluster.api().createLoadBalancer("refused", "172.30.0.12", "fd02::12",
        List.of(Addresses.nodeIp(1, IpFamily.V4), Addresses.nodeIp(1, IpFamily.V6)), List.of(c.cluster.pod("pod-b3")));
    c.cluster.api().applyEgressService("refused", SourceIPBy.LOADBALANCERIP, "", Optional.of("node-b"));
    try {
      String ip = c.cluster.pod("pod-b3").ip(IpFamily.V4);
      await().atMost(ExplainCluster.PATIENCE).untilAsserted(() -> {
        ExplainCluster.Answer first = c.explain("pod-b3", Addresses.EXTERNAL_V4);
        assertThat(first.json().path("api").path("claims").get(0).path("refusals")).as(first.text()).isNotEmpty();
      });
      Seen seen = c.leaves("pod-b3", Addresses.EXTERNAL_V4);
      ExplainCluster.Answer a = c.explain("pod-b3", Addresses.EXTERNAL_V4);
      assertThat(a.json().path("verdict").asText()).isEqualTo("not-opted-in");
      assertThat(a.json().path("api").path("claims").get(0).path("refusals")).extracting(r -> r.path("reason").asText())
          .contains("LoadBalancerIPRefused");
      assertThat(a.sentence()).startsWith(ip + " (shop/pod-b3) leaves node-b through up1 (table main); no rule of ours"
          + " touches it: EgressService shop/refused (LoadBalancerIP) claims it, but (").contains("LoadBalancerIPRefused: ")
          .as("a Warning its reporter followed by a Normal outcome is history").doesNotContain("ServiceNotFound");
      assertThat(c.uplink(seen).device()).isEqualTo(a.json().path("kernel").path("outputInterface").asText());
      assertThat(seen.source()).isEqualTo(c.uplink(seen).nodeIp(IpFamily.V4));
    } finally {
      deleteService("refused");
    }
  }

  /**
   * {@code status} in cluster (shares this class's cluster): the ClusterIP rules too are named, from the API; each
   * service gives its host and its last change and why (its newest Event).
   */
  @Test
  void statusNamesEveryRuleIncludingTheClusterIpsFromTheApiAndGivesTheHostAndTheLastChange() throws Exception {
    // the text and JSON runs below must see the same last change: wait until every writer has told its outcome
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(30)).until(() -> eventReasons("web")
        .containsAll(List.of("HostAllocated", "EgressConfigured", "EndpointsSteered")));
    List<String> args = List.of("status", "--netns", c.cluster.node("node-a").netns().name(), "--kubeconfig",
        c.cluster.api().kubeconfig().toString(), "--node", "node-a", "--service-cidr", "172.30.0.0/16,fd02::/112");
    io.egressservice.cli.InProcess.Result text = io.egressservice.cli.InProcess.run(args.toArray(String[]::new));
    assertThat(text.exit()).as(text.err()).isZero();
    java.nio.file.Files.createDirectories(java.nio.file.Path.of("target", "explain-samples"));
    java.nio.file.Files.writeString(java.nio.file.Path.of("target", "explain-samples", "status-node-a.txt"), text.out());
    assertThat(text.out()).as(text.out()).doesNotContain("sources the kernel does not name")
        .contains("shop/web\n  rule ", "\n  snat fd10:128:0:2::5 -> 2001:db8:5::5\n  host node-a\n").contains("  route throw fd02::/112 table 100 proto 201\n")
        .doesNotContain("dev #");
    List<String> jsonArgs = new java.util.ArrayList<>(args);
    jsonArgs.addAll(List.of("-o", "json"));
    io.egressservice.cli.InProcess.Result json = io.egressservice.cli.InProcess.run(jsonArgs.toArray(String[]::new));
    JsonNode services = new com.fasterxml.jackson.databind.ObjectMapper().readTree(json.out()).path("services");
    assertThat(services).as(json.out()).allSatisfy(s -> assertThat(s.has("table")).as("grouped by table: %s", s).isFalse());
    JsonNode web = java.util.stream.StreamSupport.stream(services.spliterator(), false)
        .filter(s -> s.path("service").asText().equals("shop/web")).findFirst().orElseThrow();
    assertThat(web.path("host").asText()).isEqualTo("node-a");
    assertThat(web.path("rules")).extracting(r -> r.path("from").asText())
        .contains("172.30.0.10", "fd02::10", c.cluster.pod("pod-a1").ip(IpFamily.V4));
    // the last change is the newest Event on the EgressService (the agents and the allocator write one per change)
    Newest newest = newestEvent("web");
    JsonNode change = web.path("lastChange");
    assertThat(change.path("time").asText()).as(json.out()).isEqualTo(newest.time());
    assertThat(change.path("reason").asText()).isIn(newest.reasons());
    assertThat(change.path("reporter").asText()).as("who wrote it").isNotEmpty();
    assertThat(change.path("message").asText()).as("why").isNotEmpty();
    assertThat(text.out()).contains("\n  host node-a\n  last change " + newest.time() + ": "
        + change.path("reason").asText());
    // without the API, the ClusterIPs are what the kernel cannot name
    List<String> kernelOnly = new java.util.ArrayList<>(args);
    kernelOnly.add("--no-api");
    io.egressservice.cli.InProcess.Result bare = io.egressservice.cli.InProcess.run(kernelOnly.toArray(String[]::new));
    assertThat(bare.out()).contains("sources the kernel does not name");
  }

  /** The newest Event on EgressService shop/NAME, as the API holds it: its time, and every reason written then. */
  private record Newest(String time, List<String> reasons) {}

  /** The reasons of every Event on EgressService shop/NAME. */
  private List<String> eventReasons(String name) {
    return c.cluster.api().client().v1().events().inNamespace(ApiServer.NAMESPACE).list().getItems().stream()
        .filter(e -> "EgressService".equals(e.getInvolvedObject().getKind())
            && name.equals(e.getInvolvedObject().getName()))
        .map(io.fabric8.kubernetes.api.model.Event::getReason).toList();
  }

  private Newest newestEvent(String name) {
    List<io.fabric8.kubernetes.api.model.Event> events = c.cluster.api().client().v1().events()
        .inNamespace(ApiServer.NAMESPACE).list().getItems().stream()
        .filter(e -> "EgressService".equals(e.getInvolvedObject().getKind())
            && name.equals(e.getInvolvedObject().getName()))
        .filter(e -> !"ServiceNotFound".equals(e.getReason())) // the Service exists: that was before it
        .toList();
    String time = events.stream().map(io.fabric8.kubernetes.api.model.Event::getLastTimestamp)
        .max(java.util.Comparator.naturalOrder()).orElseThrow();
    return new Newest(time, events.stream().filter(e -> time.equals(e.getLastTimestamp()))
        .map(io.fabric8.kubernetes.api.model.Event::getReason).toList());
  }

  private void deleteService(String name) {
    c.cluster.api().deleteEgressService(name);
    c.cluster.api().client().services().inNamespace(ApiServer.NAMESPACE).withName(name).delete();
    c.cluster.api().client().discovery().v1().endpointSlices().inNamespace(ApiServer.NAMESPACE)
        .withLabel("kubernetes.io/service-name", name).delete();
  }
}

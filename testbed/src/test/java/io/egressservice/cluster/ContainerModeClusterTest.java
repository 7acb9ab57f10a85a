package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.deploy.ChartRender;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import io.egressservice.testbed.Traffic.Seen;
import io.egressservice.testbed.container.ContainerCluster;
import io.egressservice.testbed.container.Podman;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The chart as users install it, run by a container runtime in the namespace cluster ({@link ContainerCluster}):
 * every node's agent is the image built by scripts/build-image.sh, started by podman from the DaemonSet's pod template
 * that Helm renders, the allocator from the Deployment's (two replicas), in-cluster configuration over HTTPS, the
 * kubelet's probes. One cluster for every method, in order: the demo's story; a failover; {@code helm upgrade --set
 * agent.metrics.port=9500} as a rolling update of both workloads that loses no datagram; a failover on the new port;
 * {@code helm uninstall}. Skips, saying why, where podman or the image cannot be had.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
@EnabledIfSystemProperty(named = "testbed.containerMode", matches = "true", disabledReason = "container mode runs"
    + " with `mvn -B -Pcontainer-mode verify` (the image build and five pod lifecycles take minutes: outside the"
    + " 15-minute suite)")
class ContainerModeClusterTest {
  static final Duration PATIENCE = Duration.ofSeconds(30);
  /**
   * The testbed's service CIDRs, and a longer agent-down grace for the allocator (120 s, default 30 s): here podman
   * takes 20 to 45 s to replace a pod on a loaded machine, against a few seconds for a kubelet with the image present,
   * and a host whose agent is down longer than the grace is drained (its services move) in a rolling update.
   */
  static final Map<String, Object> VALUES = Map.of("agent.serviceCIDRs[0]", Addresses.SERVICE_CIDR_V4,
      "agent.serviceCIDRs[1]", Addresses.SERVICE_CIDR_V6,
      "allocator.extraEnv[0].name", "EGRESS_AGENT_HOST_AGENT_DOWN_GRACE", "allocator.extraEnv[0].value", "120s");
  static final List<String> WEB_LB = List.of(Addresses.lbIp(21, IpFamily.V4), Addresses.lbIp(21, IpFamily.V6));
  static final List<String> API_LB = List.of(Addresses.lbIp(22, IpFamily.V4), Addresses.lbIp(22, IpFamily.V6));

  ContainerCluster cc;
  Cluster cluster;
  long started = System.nanoTime();

  @BeforeAll
  void start() {
    Podman.unavailable().ifPresent(reason -> Assumptions.assumeTrue(false, reason));
    var image = ImageArchive.ensure();
    Assumptions.assumeTrue(image.isPresent(), ImageArchive.why());
    cc = ContainerCluster.start(Cluster.builder().node("node-a", 2, 1).node("node-b", 1, 1),
        ChartRender.render(VALUES), image.get());
    cluster = cc.cluster();
    System.out.printf("container cluster up in %.1f s (2 agent pods, %d allocator pods)%n", seconds(started),
        cc.allocators().size());
  }

  @AfterAll
  void stop() {
    if (cc != null) {
      cc.close();
      assertThat(cluster.anyNamespaceLeft()).as("namespaces left by the cluster").isFalse();
    }
    System.out.printf("ContainerModeClusterTest: %.1f s in all%n", seconds(started));
  }

  @Test
  @Order(1)
  void theDemosStoryRunsOnTheRenderedChart() {
    cluster.api().createLoadBalancer("web", "172.30.0.21", "fd02::21", WEB_LB,
        List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1")));
    cluster.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-a"));
    await().atMost(PATIENCE).until(() -> cluster.api().host("web").equals(Optional.of("node-a")));
    for (IpFamily f : IpFamily.values()) {
      expectLeaves("pod-a1", f, new Seen("ext-a2", "udp", WEB_LB.get(f.ordinal())));
      expectLeaves("pod-b1", f, new Seen("ext-a2", "udp", WEB_LB.get(f.ordinal()))); // steered to node-a
    }
    cluster.api().applyEgressService("web", SourceIPBy.NETWORK, "100", Optional.of("node-a"));
    for (IpFamily f : IpFamily.values()) {
      expectLeaves("pod-a1", f, new Seen("ext-a2", "udp", cluster.node("node-a").uplink(2).nodeIp(f)));
    }
    cluster.api().deleteEgressService("web");
    for (IpFamily f : IpFamily.values()) {
      expectLeaves("pod-a1", f, new Seen("ext-a1", "udp", cluster.node("node-a").uplink(1).nodeIp(f)));
      expectLeaves("pod-b1", f, new Seen("ext-b1", "udp", cluster.node("node-b").uplink(1).nodeIp(f)));
    }
    for (Cluster.Node n : cluster.nodes()) {
      assertThat(UninstallClusterTest.owned(n.netns()).lines().filter(l -> !l.startsWith("table inet ")))
          .as("%s: rules, routes and devices of ours left after the delete (the agent's nft tables stay)", n).isEmpty();
    }
    assertThat(cc.apiFront().refused()).as("API connections without the mounted token").isZero();
  }

  @Test
  @Order(2)
  void theAllocatorPodMovesAServiceOffAPoweredOffHost() {
    cluster.api().createLoadBalancer("api", "172.30.0.22", "fd02::22", API_LB,
        List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1")));
    cluster.api().applyEgressService("api", SourceIPBy.LOADBALANCERIP, "", Optional.empty());
    failover();
  }

  @Test
  @Order(3)
  void aRollingUpdateOfEveryPodLosesNoDatagramAndMovesNothing() {
    Map<String, Object> upgraded = new LinkedHashMap<>(VALUES);
    upgraded.put("agent.podAnnotations.rolled", "once"); // a new pod template, as a new version's
    upgraded.put("allocator.podAnnotations.rolled", "once");
    String host = awaitHost();
    String sender = cluster.nodes().stream().filter(n -> !n.name().equals(host)).findFirst().orElseThrow().pods().get(0)
        .name();
    Seen expected = new Seen("ext-" + host.substring(5) + "1", "udp", API_LB.get(0));
    try (Traffic.Stream stream = cluster.traffic().stream(sender, Addresses.EXTERNAL_V4, Duration.ofMillis(20))) {
      await().atMost(PATIENCE).until(() -> !stream.arrivals().isEmpty());
      long t = System.nanoTime();
      Map<String, Duration> stops = cc.upgrade(ChartRender.render(upgraded));
      System.out.printf("helm upgrade (new pod annotations): every pod replaced in %.1f s; old pods stopped in %s%n",
          seconds(t), stops);
      assertThat(cluster.api().host("api")).as("api's host after the rolling update").contains(host);
      int before = stream.arrivals().size();
      await().atMost(PATIENCE).until(() -> stream.arrivals().size() > before + 10);
      stream.close();
      List<Traffic.Arrival> arrivals = stream.arrivals();
      long last = arrivals.stream().mapToLong(Traffic.Arrival::seq).max().orElseThrow();
      assertThat(arrivals.stream().map(a -> new Seen(a.where(), "udp", a.source())).distinct().toList())
          .as("where %s's datagrams arrived, with which source", sender).containsExactly(expected);
      assertThat(arrivals.stream().mapToLong(Traffic.Arrival::seq).distinct().count())
          .as("datagrams of %s arrived, of %d sent before the last seen", sender, last + 1).isEqualTo(last + 1);
    }
    for (Cluster.Node n : cluster.nodes()) {
      assertThat(cc.agent(n.name()).restarts()).as("%s's agent restarted by its liveness probe", n).isZero();
    }
  }

  @Test
  @Order(4)
  void afterAnUpgradeToMetricsPort9500TheAllocatorFailsOverOnTheAgentsNewPort() {
    Map<String, Object> upgraded = new LinkedHashMap<>(VALUES);
    upgraded.put("agent.metrics.port", 9500);
    String before = awaitHost();
    long t = System.nanoTime();
    cc.upgrade(ChartRender.render(upgraded));
    // While the pods roll, agents and allocators listen and probe on different ports: a host whose agent answers on
    // the other port longer than the allocator's agent-down grace (30 s) is drained, and its services move.
    System.out.printf("helm upgrade --set agent.metrics.port=9500: every pod replaced in %.1f s; api's host %s -> %s%n",
        seconds(t), before, cluster.api().host("api").orElse("(none)"));
    failover();
  }

  @Test
  @Order(5)
  void helmUninstallLeavesNothingOfOursOnAnyNode() {
    String host = awaitHost();
    for (Cluster.Node n : cluster.nodes()) { // what an admin would see in kubectl logs
      System.out.printf("%s's agent: warnings and errors in its log:%n%s%n", n, cc.agent(n.name()).logs().lines()
          .filter(l -> l.contains(" WARN ") || l.contains(" ERROR ")).limit(20).reduce("", (a, b) -> a + "  " + b + "\n"));
    }
    Map<String, Duration> stops = cc.uninstall();
    System.out.printf("helm uninstall: pods stopped in %s%n", stops);
    for (Cluster.Node n : cluster.nodes()) {
      assertThat(UninstallClusterTest.owned(n.netns())).as("%s: ours left after uninstall", n).isEmpty();
    }
    assertThat(cluster.api().labels(host).keySet()).as("%s's labels", host)
        .noneMatch(k -> k.startsWith("egress-service.k8s.ovn.org/"));
    stops.forEach((pod, took) -> assertThat(took).as("%s stopped within its grace period", pod)
        .isLessThan(Duration.ofSeconds(30)));
  }

  /** The host of service api powered off: another node becomes its host and the survivors' pods leave there. */
  private void failover() {
    String old = awaitHost();
    long t = System.nanoTime();
    cc.powerOff(old);
    try {
      await().atMost(Duration.ofSeconds(60)).until(() -> cluster.api().host("api").filter(h -> !h.equals(old))
          .isPresent());
      String now = cluster.api().host("api").orElseThrow();
      System.out.printf("failover of api: %s -> %s in %.1f s%n", old, now, seconds(t));
      for (Cluster.Node n : cluster.nodes()) {
        if (!n.name().equals(old)) {
          expectLeaves(n.pods().get(0).name(), IpFamily.V4, new Seen("ext-" + now.substring(5) + "1", "udp",
              API_LB.get(0)));
        }
      }
    } finally {
      cc.powerOn(old);
    }
  }

  private String awaitHost() {
    await().atMost(PATIENCE).until(() -> cluster.api().host("api").isPresent());
    return cluster.api().host("api").orElseThrow();
  }

  private void expectLeaves(String pod, IpFamily f, Seen seen) {
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(200)).untilAsserted(() -> {
      Traffic.Probe p = cluster.traffic().udp(pod, Addresses.external(f));
      assertThat(p.seen()).as("udp %s -> external over %s: who saw it", pod, f).containsExactly(seen);
    });
  }

  private static double seconds(long since) {
    return (System.nanoTime() - since) / 1e9;
  }

}

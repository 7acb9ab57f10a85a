package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Namespace;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import io.egressservice.testing.Privileges;
import io.fabric8.kubernetes.api.model.apps.DaemonSetBuilder;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The agents' lifecycle against their DaemonSet, with the real agent processes (mark mode, allocator on) told their
 * DaemonSet as the chart tells them ({@code EGRESS_AGENT_OWNER}, the pod's namespace): a rolling update (the
 * DaemonSet present, each agent stopped with SIGTERM and started again) changes nothing in any node's kernel and
 * traffic keeps its LB IP; deleting the DaemonSet, then SIGTERM to each agent (what the garbage collector does),
 * leaves nothing of ours on any node (rules, routes, nft tables, the steering device) and no host label, and the
 * former endpoint's traffic leaves without the LB IP. Service {@code web}: endpoints pod-a1 and pod-b1 (steered),
 * network 100, host node-a.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class UninstallClusterTest {
  static final String DAEMONSET = "egress-service-agent";
  static final Duration PATIENCE = Duration.ofSeconds(15);
  static final List<String> LB_IPS = List.of(Addresses.lbIp(7, IpFamily.V4), Addresses.lbIp(7, IpFamily.V6));

  Cluster cluster;

  @BeforeAll
  void start() {
    Privileges.assumeNetAdmin();
    cluster = Cluster.builder().node("node-a", 2, 1).node("node-b", 1, 1)
        .agentArgs("--rule-mode", "mark")
        .agentEnv("EGRESS_AGENT_OWNER", "daemonset/" + DAEMONSET)
        .beforeAgents(api -> api.client().apps().daemonSets().inNamespace(AgentProcess.LEASE_NAMESPACE)
            .resource(new DaemonSetBuilder().withNewMetadata().withName(DAEMONSET).endMetadata()
                .withNewSpec().withNewSelector().addToMatchLabels("app.kubernetes.io/name", DAEMONSET).endSelector()
                  .withNewTemplate().withNewMetadata().addToLabels("app.kubernetes.io/name", DAEMONSET).endMetadata()
                    .withNewSpec().addNewContainer().withName("agent").withImage("agent").endContainer().endSpec()
                  .endTemplate().endSpec()
                .build()).create())
        .start();
    cluster.api().createLoadBalancer("web", "172.30.0.17", "fd02::17", LB_IPS,
        List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1")));
    cluster.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-a"));
    await().atMost(PATIENCE).until(() -> cluster.api().host("web").equals(Optional.of("node-a")));
  }

  @AfterAll
  void stop() {
    if (cluster != null) {
      cluster.close();
      assertThat(cluster.anyNamespaceLeft()).as("namespaces left by the cluster").isFalse();
    }
  }

  @Test
  @Order(1)
  void aRollingUpdateChangesNoRuleAndTrafficKeepsItsLbIp() {
    for (IpFamily f : IpFamily.values()) {
      expectLeaves("pod-b1", f, new Seen("ext-a2", "udp", LB_IPS.get(f.ordinal())));
    }
    // Flows restarted by the service's arrival are marked for a second (restarting_ elements that expire): the
    // kernel is compared once they are gone, so what is compared is what the agents own, not a countdown.
    await().atMost(PATIENCE).until(() -> kernelStates().values().stream().noneMatch(s -> s.contains(" expires ")));
    Map<String, String> before = kernelStates();
    // Both nodes at once (a rolling update goes node by node; the kernel of each sees the same), to spare a JVM start.
    for (Cluster.Node node : cluster.nodes()) {
      node.agent().stop(); // SIGTERM, the DaemonSet present: the old pod of a rolling update
      assertThat(node.agent().tail(20)).contains("is present (a GET at SIGTERM)");
    }
    assertThat(kernelStates()).as("every node's kernel once its old agent stopped").isEqualTo(before);
    cluster.nodes().forEach(n -> n.agent().start()); // the new pods
    cluster.nodes().forEach(n -> n.agent().awaitReady());
    assertThat(kernelStates()).as("every node's kernel with the new agents").isEqualTo(before);
    for (IpFamily f : IpFamily.values()) {
      expectLeaves("pod-b1", f, new Seen("ext-a2", "udp", LB_IPS.get(f.ordinal())));
      expectLeaves("pod-a1", f, new Seen("ext-a2", "udp", LB_IPS.get(f.ordinal())));
    }
  }

  @Test
  @Order(2)
  void deletingTheDaemonSetLeavesNothingOfOursOnAnyNodeAndNoHostLabel() {
    assertThat(owned(cluster.node("node-b").netns())).as("node-b's own state before").contains("egress-vx");
    cluster.api().client().apps().daemonSets().inNamespace(AgentProcess.LEASE_NAMESPACE).withName(DAEMONSET).delete();
    for (Cluster.Node node : cluster.nodes()) {
      long start = System.nanoTime();
      node.agent().stop(); // the garbage collector deletes the DaemonSet's pods: SIGTERM
      long ms = (System.nanoTime() - start) / 1_000_000;
      System.out.printf("%s: SIGTERM to exit, uninstall included: %d ms%n", node, ms);
      assertThat(ms).as("%s's agent stopped and removed its state within the grace period", node).isLessThan(10_000);
      assertThat(owned(node.netns())).as("%s: what is left of ours", node).isEmpty();
    }
    assertThat(cluster.api().labels("node-a").keySet()).as("node-a's labels")
        .noneMatch(k -> k.startsWith("egress-service.k8s.ovn.org/"));
    assertThat(cluster.api().host("web")).as("web's status.host").isEmpty();
    for (IpFamily f : IpFamily.values()) {
      expectLeaves("pod-b1", f, new Seen("ext-b1", "udp", cluster.node("node-b").uplink(1).nodeIp(f)));
    }
  }

  /** Rules and routes with our protocol, our nft tables, our device: the lines found (empty when none). */
  static String owned(Namespace ns) {
    StringBuilder left = new StringBuilder();
    for (String family : List.of("-4", "-6")) {
      ns.exec("ip", family, "rule", "show").lines().filter(l -> l.contains("proto 201")).forEach(l -> left.append(l)
          .append('\n'));
      left.append(ns.exec("ip", family, "route", "show", "table", "all", "proto", "201"));
    }
    ns.exec("nft", "list", "tables").lines().filter(l -> l.contains("egress_service_agent"))
        .forEach(l -> left.append(l).append('\n'));
    ns.exec("ip", "-o", "link", "show").lines().filter(l -> l.contains("egress-vx"))
        .forEach(l -> left.append(l).append('\n'));
    return left.toString().trim();
  }

  private Map<String, String> kernelStates() {
    Map<String, String> out = new LinkedHashMap<>();
    cluster.nodes().forEach(n -> out.put(n.name(), KernelState.of(n.netns())));
    return out;
  }

  private void expectLeaves(String pod, IpFamily f, Seen seen) {
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
      Probe p = cluster.traffic().udp(pod, Addresses.external(f));
      assertThat(p.seen()).as("udp %s -> external over %s: who saw it", pod, f).containsExactly(seen);
    });
  }
}

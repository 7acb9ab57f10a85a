package io.egressservice.cluster;

import static io.egressservice.cluster.SteeringCluster.LB_IPS;
import static io.egressservice.cluster.SteeringCluster.PATIENCE;
import static io.egressservice.cluster.SteeringCluster.SERVICE;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.ApiServer;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.TestMethodOrder;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Steering across nodes with real packets, in the namespace cluster ({@link Cluster#standard()}: node-a and node-c
 * with two uplinks, node-b with one; the real agent on every node, allocator on). Service {@code web} has endpoints
 * pod-a1, pod-b1 and pod-c1, {@code sourceIPBy: LoadBalancerIP}, {@code network: "100"} and a nodeSelector that
 * makes node-a its host: every endpoint, wherever it runs, must reach the external host through node-a's second
 * uplink (ext-a2) with the LB IP, in both families, over UDP and TCP. pod-b2 never opted in.
 * {@link SourceRuleModeClusterTest} and {@link MarkRuleModeClusterTest} run it in each rule mode, on the cluster
 * they share with {@link SteeringGuardClusterTest} (this class runs first, and leaves no service behind).
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
abstract class SteeringClusterTest {
  static final List<String> STEERED = List.of("pod-b1", "pod-c1");

  SteeringCluster steering;
  Cluster cluster;
  /** Each node's kernel state with the agents running and no EgressService (see {@link KernelState}). */
  Map<String, String> pristine;

  /** The running cluster of the enclosing class, without any EgressService. */
  abstract SteeringCluster shared();

  @BeforeAll
  void takeTheCluster() {
    steering = shared();
    cluster = steering.cluster();
    pristine = kernelStates();
  }

  @AfterEach
  void deleteTheService() {
    if (cluster != null && cluster.api().client().services().inNamespace(ApiServer.NAMESPACE).withName(SERVICE).get() != null) {
      cluster.api().deleteEgressService(SERVICE);
      cluster.api().client().services().inNamespace(ApiServer.NAMESPACE).withName(SERVICE).delete();
      cluster.api().client().discovery().v1().endpointSlices().inNamespace(ApiServer.NAMESPACE)
          .withLabel("kubernetes.io/service-name", SERVICE).delete();
      awaitPristine();
    }
  }

  // ---- the cases ----------------------------------------------------------------------------------

  @Test
  @Order(1)
  void podsOnNodeBAndNodeCLeaveThroughTheHostsChosenUplinkWithTheLbIpAndAPodThatDidNotOptInIsUntouched() {
    for (IpFamily f : IpFamily.values()) {
      expectUntouched("pod-b2", f);
      expectUntouched("pod-b1", f);
    }

    createWebOn("node-a");

    for (IpFamily f : IpFamily.values()) {
      String lbIp = LB_IPS.get(f.ordinal());
      steering.expectEndpointsLeaveThrough("ext-a2", f);
      for (String pod : STEERED) {
        Traffic.Transfer t = cluster.traffic().transfer(pod, Addresses.external(f), 1 << 20, Duration.ofSeconds(20));
        assertThat(t.seen()).as("1 MiB from %s over %s: who saw it", pod, f).containsExactly(new Seen("ext-a2", "tcp", lbIp));
        assertThat(t.complete()).as("1 MiB from %s over %s completes (answer %s)", pod, f, t.reply()).isTrue();
      }
      expectUntouched("pod-b2", f);
      // pod-to-pod and pod-to-node traffic of a steered pod keeps the pod network and the pod's address
      expect("udp", "pod-b1", cluster.pod("pod-c1").ip(f), new Seen("pod-c1", "udp", cluster.pod("pod-b1").ip(f)));
      expect("tcp", "pod-b1", cluster.pod("pod-a1").ip(f), new Seen("pod-a1", "tcp", cluster.pod("pod-b1").ip(f)));
    }
  }

  /** The agents of node-b and node-c say what they steer: one endpoint per family each; the host steers nothing. */
  @Test
  @Order(2)
  void theMetricOfEveryAgentCountsTheEndpointsItSteers() {
    createWebOn("node-a");
    await().atMost(PATIENCE).untilAsserted(() -> {
      for (String node : List.of("node-b", "node-c")) {
        assertThat(cluster.node(node).agent().metric("egress_service_agent_steered_endpoints")).as(node).isEqualTo(2.0);
      }
      assertThat(cluster.node("node-a").agent().metric("egress_service_agent_steered_endpoints")).as("node-a").isZero();
    });
  }

  /**
   * The client connects to the LB IP on node-a (ext-a1 routes the LB range there): node-a's kube-proxy stand-in
   * DNATs port 80 to pod-a1 and port 81 to pod-b1 (with kube-proxy's masquerade, as for externalTrafficPolicy
   * Cluster). The connections work, and their replies leave through the service's network (ext-a2), not back
   * through ext-a1.
   */
  @Test
  @Order(3)
  void inboundLoadBalancerConnectionsWorkAndTheirRepliesLeaveThroughTheHostsNetwork() {
    createWebOn("node-a");
    Cluster.Node a = cluster.node("node-a");
    for (IpFamily f : IpFamily.values()) {
      cluster.kubeProxy("node-a", LB_IPS.get(f.ordinal()), 80, cluster.pod("pod-a1"));
      cluster.kubeProxy("node-a", LB_IPS.get(f.ordinal()), 81, cluster.pod("pod-b1"));
    }
    try {
      for (IpFamily f : IpFamily.values()) {
        String lbIp = LB_IPS.get(f.ordinal());
        expectInbound(lbIp, 80, new Seen("pod-a1", "tcp", Addresses.client(f)));
        expectInbound(lbIp, 81, new Seen("pod-b1", "tcp", a.ip(f)));
      }
    } finally {
      cluster.removeKubeProxy("node-a");
    }
  }

  @Test
  @Order(4)
  void theHostMovesFromNodeAToNodeCAndTrafficFollows() {
    createWebOn("node-a");
    for (IpFamily f : IpFamily.values()) {
      expect("udp", "pod-b1", Addresses.external(f), new Seen("ext-a2", "udp", LB_IPS.get(f.ordinal())));
    }

    cluster.api().applyEgressService(SERVICE, SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-c"));
    await().atMost(PATIENCE).until(() -> cluster.api().host(SERVICE).equals(Optional.of("node-c")));

    for (IpFamily f : IpFamily.values()) {
      String lbIp = LB_IPS.get(f.ordinal());
      steering.expectEndpointsLeaveThrough("ext-c2", f);
      Traffic.Transfer t = cluster.traffic().transfer("pod-a1", Addresses.external(f), 1 << 20, Duration.ofSeconds(20));
      assertThat(t.seen()).containsExactly(new Seen("ext-c2", "tcp", lbIp));
      assertThat(t.complete()).as("1 MiB from pod-a1 through node-c (answer %s)", t.reply()).isTrue();
      expectUntouched("pod-b2", f);
    }
  }

  @Test
  @Order(5)
  void deletingTheEgressServiceLeavesNoSteeringStateOnAnyNode() {
    createWebOn("node-a");
    for (IpFamily f : IpFamily.values()) {
      expect("udp", "pod-b1", Addresses.external(f), new Seen("ext-a2", "udp", LB_IPS.get(f.ordinal())));
    }
    assertThat(kernelStates()).as("with the service in force, the nodes' state differs from the start")
        .isNotEqualTo(pristine);

    cluster.api().deleteEgressService(SERVICE);

    awaitPristine();
    for (IpFamily f : IpFamily.values()) {
      for (String pod : List.of("pod-b1", "pod-c1")) {
        expectUntouched(pod, f);
      }
    }
  }

  // ---- helpers ------------------------------------------------------------------------------------

  void createWebOn(String host) {
    steering.createWebOn(host);
  }

  /** A pod that is not steered leaves through its own node's main uplink, masqueraded by the CNI. */
  void expectUntouched(String pod, IpFamily f) {
    Cluster.Node node = cluster.node(cluster.pod(pod).node());
    expect("udp", pod, Addresses.external(f), new Seen(node.uplink(1).where(), "udp", node.uplink(1).nodeIp(f)));
    expect("tcp", pod, Addresses.external(f), new Seen(node.uplink(1).where(), "tcp", node.uplink(1).nodeIp(f)));
  }

  void expect(String protocol, String from, String dst, Seen seen) {
    steering.expect(protocol, from, dst, seen);
  }

  /** The client's connection to {@code lbIp:port} is accepted as {@code seen}; its replies come back by ext-a2 only. */
  void expectInbound(String lbIp, int port, Seen seen) {
    Cluster.Node a = cluster.node("node-a");
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
      long viaServiceNetwork = cluster.lbPacketsToClientVia(a.uplink(2));
      long viaMain = cluster.lbPacketsToClientVia(a.uplink(1));
      Probe p = cluster.traffic().tcp("client", lbIp, port);
      assertThat(p.seen()).as("client -> %s:%d: who accepted it", lbIp, port).containsExactly(seen);
      assertThat(p.reply()).contains("saw " + seen.source() + " at " + seen.where());
      assertThat(cluster.lbPacketsToClientVia(a.uplink(2))).as("replies through ext-a2").isGreaterThan(viaServiceNetwork);
      assertThat(cluster.lbPacketsToClientVia(a.uplink(1))).as("replies through ext-a1").isEqualTo(viaMain);
    });
  }

  Map<String, String> kernelStates() {
    Map<String, String> states = new LinkedHashMap<>();
    for (Cluster.Node n : cluster.nodes()) {
      states.put(n.name(), KernelState.of(n.netns()));
    }
    return states;
  }

  void awaitPristine() {
    await().atMost(PATIENCE).pollInterval(Duration.ofMillis(200))
        .untilAsserted(() -> assertThat(kernelStates()).as("every node's kernel state, as before the service")
            .isEqualTo(pristine));
  }
}

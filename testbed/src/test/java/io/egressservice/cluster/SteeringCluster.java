package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import io.egressservice.testing.Privileges;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The steering scenario {@link SteeringClusterTest} and {@link SteeringGuardClusterTest} share: the namespace cluster
 * ({@link Cluster#standard()}, the real agent on every node in one rule mode) and service {@code web} (endpoints
 * pod-a1, pod-b1, pod-c1; {@code sourceIPBy: LoadBalancerIP}, {@code network: "100"}) placed on a chosen host, with
 * the probe both classes judge packets by. Closing it stops the cluster and fails if a namespace is left.
 */
final class SteeringCluster implements AutoCloseable {
  static final Duration PATIENCE = Duration.ofSeconds(15);
  static final String SERVICE = "web";
  static final List<String> LB_IPS = List.of(Addresses.lbIp(5, IpFamily.V4), Addresses.lbIp(5, IpFamily.V6));

  private final Cluster cluster;

  private SteeringCluster(Cluster cluster) {
    this.cluster = cluster;
  }

  /** Starts the cluster with the agents in {@code ruleMode}; the calling class is skipped without root. */
  static SteeringCluster start(String ruleMode) {
    Privileges.assumeNetAdmin();
    return new SteeringCluster(Cluster.standard().agentArgs("--rule-mode", ruleMode).start());
  }

  Cluster cluster() {
    return cluster;
  }

  /** Creates {@code web} with its three endpoints and waits until {@code host} is its host. */
  void createWebOn(String host) {
    cluster.api().createLoadBalancer(SERVICE, "172.30.0.10", "fd02::10", LB_IPS,
        List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1"), cluster.pod("pod-c1")));
    cluster.api().applyEgressService(SERVICE, SourceIPBy.LOADBALANCERIP, "100", Optional.of(host));
    await().atMost(PATIENCE).until(() -> cluster.api().host(SERVICE).equals(Optional.of(host)));
  }

  /** Every endpoint of {@code web} reaches the external host through {@code uplink} with the LB IP, over UDP and TCP. */
  void expectEndpointsLeaveThrough(String uplink, IpFamily f) {
    String lbIp = LB_IPS.get(f.ordinal());
    for (String pod : List.of("pod-a1", "pod-b1", "pod-c1")) {
      expect("udp", pod, Addresses.external(f), new Seen(uplink, "udp", lbIp));
      expect("tcp", pod, Addresses.external(f), new Seen(uplink, "tcp", lbIp));
    }
  }

  /** Exactly one server saw the probe, as {@code seen} says, and the sender got its answer. */
  void expect(String protocol, String from, String dst, Seen seen) {
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
      Probe p = protocol.equals("udp") ? cluster.traffic().udp(from, dst) : cluster.traffic().tcp(from, dst);
      assertThat(p.seen()).as("%s %s -> %s: who saw it", protocol, from, dst).containsExactly(seen);
      assertThat(p.reply()).as("%s %s -> %s: the answer", protocol, from, dst)
          .contains("saw " + seen.source() + " at " + seen.where());
    });
  }

  @Override
  public void close() {
    cluster.close();
    assertThat(cluster.anyNamespaceLeft()).as("namespaces left by the cluster").isFalse();
  }
}

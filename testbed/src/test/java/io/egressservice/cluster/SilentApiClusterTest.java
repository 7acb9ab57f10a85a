package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.ApiProxy;
import io.egressservice.testbed.Cluster;
import io.egressservice.testing.Privileges;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * Connections to the API server that stay open and deliver nothing (every one open at the moment, watches and
 * requests alike, while new connections work), and a watch reconnect answered 410 Gone on its HTTP handshake: the
 * agents notice, open new connections or list again: an endpoint removed meanwhile leaves the kernel, and the
 * allocator gives an EgressService created meanwhile its host, within the watch idle timeout and a reconcile (3 s
 * here; bookmarks come every second, so a healthy watch is never idle that long).
 */
class SilentApiClusterTest {
  private static final Duration IDLE = Duration.ofSeconds(3);
  /** The idle timeout, a reconnect and a replay, a reconcile: with room for a loaded machine. */
  private static final Duration BOUND = Duration.ofSeconds(25);

  @BeforeEach
  void privileged() {
    Privileges.assumeNetAdmin();
  }

  @Test
  void endpointsRemovedWhileTheApiConnectionsAreSilentOrWatchesAreGoneLeaveTheKernel() {
    try (Cluster c = Cluster.builder().node("node-a", 1, 1).node("node-b", 1, 2)
        .agentArgs("--no-host=drop", "--api-watch-idle-timeout=" + IDLE.toSeconds() + "s")
        .apiThroughProxy().expiringWatches().start()) {
      String web = Addresses.lbIp(5, IpFamily.V4);
      c.api().createLoadBalancer("web", "172.30.0.10", "fd02::10", List.of(web, Addresses.lbIp(5, IpFamily.V6)),
          List.of(c.pod("pod-a1"), c.pod("pod-b1"), c.pod("pod-b2")));
      c.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "", Optional.empty());
      c.api().createLoadBalancer("shop", "172.30.0.11", "fd02::11",
          List.of(Addresses.lbIp(6, IpFamily.V4), Addresses.lbIp(6, IpFamily.V6)), List.of(c.pod("pod-b2")));
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() ->
          leavesAs(c, "pod-b1", web) && leavesAs(c, "pod-b2", web));
      ApiProxy proxy = c.api().proxy().orElseThrow();

      proxy.mode(ApiProxy.Mode.SILENT);
      c.api().setEndpoints("web", List.of(c.pod("pod-a1"), c.pod("pod-b2")));
      // the allocator (in the agents) is cut off as well: only a recovered watch shows it this EgressService
      c.api().applyEgressService("shop", SourceIPBy.LOADBALANCERIP, "", Optional.of("node-b"));
      long silenced = System.nanoTime();
      await().atMost(BOUND).pollInterval(Duration.ofMillis(200)).until(() -> !leavesAs(c, "pod-b1", web));
      System.out.printf("an endpoint removed behind silent connections left the kernel after %.1f s%n",
          (System.nanoTime() - silenced) / 1e9);
      assertThat(leavesAs(c, "pod-a1", web)).as("the remaining endpoint keeps its identity").isTrue();
      await().atMost(BOUND).until(() -> c.api().host("shop").equals(Optional.of("node-b")));
      System.out.printf("an EgressService created behind silent connections got its host after %.1f s%n",
          (System.nanoTime() - silenced) / 1e9);
      proxy.mode(ApiProxy.Mode.PASS);

      c.api().goneOnWatchHandshake(true);
      proxy.mode(ApiProxy.Mode.REFUSE); // every watch drops; each reconnect's handshake is answered 410
      c.api().setEndpoints("web", List.of(c.pod("pod-a1")));
      proxy.mode(ApiProxy.Mode.PASS);
      long refused = System.nanoTime();
      await().atMost(BOUND).pollInterval(Duration.ofMillis(200)).until(() -> !leavesAs(c, "pod-b2", web));
      System.out.printf("an endpoint removed while watch handshakes were gone left the kernel after %.1f s%n",
          (System.nanoTime() - refused) / 1e9);
      // the endpoint may leave by a relist before a watch handshake is tried: the handshakes come right after it
      await().atMost(BOUND).untilAsserted(() ->
          assertThat(c.api().watchHandshakesGone()).as("watch handshakes answered 410").isPositive());
      c.api().goneOnWatchHandshake(false);

      await().atMost(BOUND).untilAsserted(() -> {
        for (Cluster.Node n : c.nodes()) {
          assertThat(n.agent().running()).as("agent of %s running", n.name()).isTrue();
          assertThat(n.agent().metric("egress_service_agent_api_watch_up")).as("watches up on %s", n.name())
              .isPositive();
        }
      });
      assertThat(leavesAs(c, "pod-a1", web)).isTrue();
    }
  }

  private static boolean leavesAs(Cluster c, String pod, String source) {
    return c.traffic().udp(pod, Addresses.EXTERNAL_V4).seen().stream().anyMatch(s -> s.source().equals(source));
  }
}

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
 * An API server that comes back from an outage without its watch history (as a real one after a restart or an etcd
 * compaction) answers the agents' resumed watches with 410 Gone; their informers must list again and so learn what
 * changed while they were cut off. The plain mock resumes any watch silently and would hide a client that does not.
 */
class ExpiredWatchClusterTest {
  @BeforeEach
  void privileged() {
    Privileges.assumeNetAdmin();
  }

  @Test
  void informersListAgainWhenTheirWatchHistoryExpiredDuringAnOutage() {
    try (Cluster c = Cluster.standard().agentArgs("--no-host=drop").apiThroughProxy().expiringWatches().start()) {
      String web = Addresses.lbIp(5, IpFamily.V4);
      c.api().createLoadBalancer("web", "172.30.0.10", "fd02::10", List.of(web, Addresses.lbIp(5, IpFamily.V6)),
          List.of(c.pod("pod-a1"), c.pod("pod-b1")));
      c.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "", Optional.empty());
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() ->
          c.traffic().udp("pod-b1", Addresses.EXTERNAL_V4).seen().stream().anyMatch(s -> s.source().equals(web)));

      ApiProxy proxy = c.api().proxy().orElseThrow();
      proxy.mode(ApiProxy.Mode.REFUSE);
      c.api().expireWatchHistory();
      // written while the agents cannot see it: only a fresh list shows it to them
      String shop = Addresses.lbIp(6, IpFamily.V4);
      c.api().createLoadBalancer("shop", "172.30.0.11", "fd02::11", List.of(shop, Addresses.lbIp(6, IpFamily.V6)),
          List.of(c.pod("pod-c1")));
      c.api().applyEgressService("shop", SourceIPBy.LOADBALANCERIP, "", Optional.empty());
      pause(3000);
      proxy.mode(ApiProxy.Mode.PASS);

      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(200)).until(() ->
          c.traffic().udp("pod-c1", Addresses.EXTERNAL_V4).seen().stream().anyMatch(s -> s.source().equals(shop)));
      assertThat(c.api().watchesGone()).as("watches answered 410 Gone").isPositive();
      assertThat(c.traffic().udp("pod-b1", Addresses.EXTERNAL_V4).seen()).as("web's pod after the relist")
          .allSatisfy(s -> assertThat(s.source()).isEqualTo(web));
      for (Cluster.Node n : c.nodes()) {
        assertThat(n.agent().running()).as("agent of %s running", n.name()).isTrue();
        assertThat(n.agent().metric("egress_service_agent_api_watch_up")).as("watches up on %s", n.name())
            .isPositive();
      }
    }
  }

  private static void pause(long ms) {
    try {
      Thread.sleep(ms);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException(e);
    }
  }
}

package io.egressservice.explain;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Traffic.Seen;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code explain} in mark mode: the kernel is asked with the mark our nft map gives the pod's packets, so the verdict
 * names the fwmark rule and still matches where real packets leave.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class ExplainMarkModeClusterTest {
  @RegisterExtension
  static final ExplainCluster c = new ExplainCluster("mark");

  @Test
  void aMarkedPodOnTheHostIsRoutedByItsNetworksFwmarkRule() {
    for (IpFamily f : IpFamily.values()) {
      String lb = ExplainCluster.WEB_LB.get(f.ordinal());
      Seen seen = c.leaves("pod-a1", Addresses.external(f));
      ExplainCluster.Answer a = c.explain("pod-a1", Addresses.external(f));
      JsonNode k = a.json().path("kernel");
      assertThat(k.path("mark").asText()).startsWith("0x");
      assertThat(k.path("rule").asText()).contains("fwmark").contains("lookup 100");
      assertThat(a.sentence()).isEqualTo(c.cluster.pod("pod-a1").ip(f) + " (shop/pod-a1) leaves node-a through up2"
          + " (table 100) as " + lb + ", because EgressService shop/web (LoadBalancerIP, network 100)");
      assertThat(c.uplink(seen).device()).isEqualTo(k.path("outputInterface").asText());
      assertThat(seen.source()).isEqualTo(k.path("snat").asText());
    }
  }

  @Test
  void aMarkedSteeredPodIsSteeredToItsHost() {
    for (IpFamily f : IpFamily.values()) {
      Seen seen = c.leaves("pod-b1", Addresses.external(f));
      ExplainCluster.Answer a = c.explain("pod-b1", Addresses.external(f));
      JsonNode k = a.json().path("kernel");
      assertThat(a.json().path("verdict").asText()).isEqualTo("steered");
      assertThat(k.path("mark").asText()).startsWith("0x");
      assertThat(k.path("steeredToNode").asText()).isEqualTo(c.uplink(seen).node()).isEqualTo("node-a");
      assertThat(seen.source()).isEqualTo(ExplainCluster.WEB_LB.get(f.ordinal()));
    }
  }
}

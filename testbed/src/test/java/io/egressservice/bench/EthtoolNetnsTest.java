package io.egressservice.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.testing.NetnsFixture;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The steering bench's offload reader and setter ({@link Ethtool}) against the kernel, in a throwaway namespace with a
 * veth pair: what it reads is the device's state (a veth's defaults), and what it sets is what the kernel reports next.
 */
class EthtoolNetnsTest {
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("ethtool");

  @Test
  void readsEveryDeviceWithAVethsDefaultOffloads() {
    kernel.ns().exec("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb");

    Map<String, Set<String>> active = kernel.thread().call(Ethtool::activeFeatures);

    assertThat(active).containsKeys("lo", "va", "vb");
    assertThat(active.get("va")).contains("tx-checksum-ip-generic", "tx-scatter-gather", "tx-tcp-segmentation",
        "tx-generic-segmentation", "tx-udp_tnl-segmentation", "tx-udp_tnl-csum-segmentation")
        .doesNotContain("rx-gro", "rx-udp-gro-forwarding");
  }

  @Test
  void aFeatureSetIsWhatTheKernelReportsNextAndOnlyTheNamedOnesChange() {
    kernel.ns().exec("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb");
    Set<String> before = kernel.thread().call(Ethtool::activeFeatures).get("va");

    kernel.thread().call(() -> {
      Ethtool.set("va", Map.of("rx-gro", true, "rx-udp-gro-forwarding", true, "tx-generic-segmentation", false));
      return null;
    });

    Set<String> after = kernel.thread().call(Ethtool::activeFeatures).get("va");
    assertThat(after).contains("rx-gro", "rx-udp-gro-forwarding").doesNotContain("tx-generic-segmentation");
    assertThat(after).containsAll(before.stream().filter(f -> !f.equals("tx-generic-segmentation")).toList());
    assertThat(kernel.thread().call(Ethtool::activeFeatures).get("vb")).doesNotContain("rx-gro");
  }

  @Test
  void aFeatureTheKernelDoesNotKnowIsRefused() {
    kernel.ns().exec("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb");

    assertThatThrownBy(() -> kernel.thread().call(() -> {
      Ethtool.set("va", Map.of("no-such-feature", true));
      return null;
    })).hasMessageContaining("no-such-feature").hasMessageContaining("refused");
  }
}

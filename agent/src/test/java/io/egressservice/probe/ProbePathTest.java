package io.egressservice.probe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.RemoteEndpoints;
import io.egressservice.model.RuleMode;
import io.egressservice.testing.Privileges;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Which probe the startup runs: the scratch namespace where one can be made, else the node's namespace, else none;
 * and the in-node answers are admitted exactly as the scratch ones are.
 */
class ProbePathTest {
  private static final PlanConfig MARK =
      PlanConfig.defaults().withRuleMode(RuleMode.MARK, PlanConfig.defaults().markMask());

  private static FeatureCheck kernel(String release, Set<Feature> missing) {
    return new FeatureCheck() {
      @Override
      public Optional<String> missing(Feature feature) {
        return missing.contains(feature) ? Optional.of("refused (Operation not supported)") : Optional.empty();
      }

      @Override
      public String kernelRelease() {
        return release;
      }
    };
  }

  private static FeatureCheck noScratch() {
    throw new ScratchNamespace.Unavailable("cannot make a scratch network namespace: errno 1", true, null);
  }

  @Test
  void withAScratchNamespaceTheNodesNamespaceIsNotTouched() {
    boolean[] inNode = {false};
    KernelProbe.atStartup(MARK, () -> kernel("6.18.0", Set.of()), () -> {
      inNode[0] = true;
      return kernel("6.18.0", Set.of());
    });

    assertThat(inNode[0]).isFalse();
  }

  @Test
  void withoutAScratchNamespaceTheNodesNamespaceIsProbedAndItsAnswersCount() {
    Privileges.assumeNetAdmin();
    assertThatThrownBy(() -> KernelProbe.atStartup(MARK, ProbePathTest::noScratch,
        () -> kernel("5.1.0", Set.of(Feature.NFT_INET_NAT))))
        .isInstanceOf(KernelProbe.MissingFeatures.class).hasMessageContaining("Linux 5.2 and nftables 0.9.1");

    PlanConfig steering = PlanConfig.defaults();
    assertThat(steering.steering().mode()).isEqualTo(RemoteEndpoints.STEER);
    PlanConfig admitted = KernelProbe.atStartup(steering, ProbePathTest::noScratch,
        () -> kernel("4.6.7", Set.of(Feature.VXLAN_GPE)));
    assertThat(admitted.steering().mode()).isEqualTo(RemoteEndpoints.REPORT);
  }

  @Test
  void withNeitherTheAgentStartsUnprobedAsConfigured() {
    PlanConfig admitted = KernelProbe.atStartup(MARK, ProbePathTest::noScratch, () -> {
      throw new ScratchNamespace.Unavailable("cannot probe in the node's network namespace: errno 1", true, null);
    });

    assertThat(admitted).isEqualTo(MARK);
  }

  @Test
  void theProbeTablesAreTheScriptsOwnAndTheReadbackOne() {
    assertThat(NodeNamespaceCheck.probeTables()).contains(NodeNamespaceCheck.READBACK_TABLE, "esa_probe_nat",
        "esa_probe_route").hasSize(ScratchNamespace.SCRIPTS.size() + 1).allMatch(n -> n.startsWith("esa_probe_"));
    assertThat(Map.copyOf(ScratchNamespace.SCRIPTS)).hasSize(8);
  }
}

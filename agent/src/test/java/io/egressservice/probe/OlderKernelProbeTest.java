package io.egressservice.probe;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.RemoteEndpoints;
import io.egressservice.model.RuleMode;
import java.util.EnumSet;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/** The probe's decisions, with a {@link FeatureCheck} that answers as an older kernel would. */
class OlderKernelProbeTest {
  private static final PlanConfig STEERING = PlanConfig.defaults();
  private static final PlanConfig MARK = PlanConfig.defaults().withRuleMode(RuleMode.MARK,
      PlanConfig.defaults().markMask());

  /** A kernel of {@code release} on which {@code lacking} answer as not there. */
  private static FeatureCheck kernel(String release, Set<Feature> lacking) {
    return new FeatureCheck() {
      @Override
      public Optional<String> missing(Feature feature) {
        return lacking.contains(feature) ? Optional.of("Operation not supported") : Optional.empty();
      }

      @Override
      public String kernelRelease() {
        return release;
      }
    };
  }

  private static KernelProbe.Admission admit(String release, Set<Feature> lacking, PlanConfig config) {
    return KernelProbe.admit(KernelProbe.probe(kernel(release, lacking)), config);
  }

  @Test
  void aKernelWithEverythingStartsAsConfigured() {
    KernelProbe.Admission a = admit("6.18.44", Set.of(), MARK);

    assertThat(a.config()).isEqualTo(MARK);
    assertThat(a.fallbacks()).isEmpty();
  }

  @Test
  void withoutVxlanGpeSteeringFallsBackToReportingRemoteEndpoints() {
    KernelProbe.Admission a = admit("4.6.7", Set.of(Feature.VXLAN_GPE), STEERING);

    assertThat(a.config().steering().mode()).isEqualTo(RemoteEndpoints.REPORT);
    assertThat(a.config().steering().port()).isEqualTo(STEERING.steering().port());
    assertThat(a.config().withSteering(STEERING.steering())).isEqualTo(STEERING);
    assertThat(a.fallbacks()).singleElement().asString()
        .contains("Linux 4.6.7 lacks", "VXLAN-GPE", "first in Linux 4.7", "--remote-endpoints=report");
  }

  @Test
  void withoutVxlanGpeAConfigurationThatDoesNotSteerNeedsNoFallback() {
    PlanConfig report = STEERING.withSteering(new io.egressservice.model.SteeringConfig(RemoteEndpoints.REPORT,
        STEERING.steering().firstTable(), STEERING.steering().port()));

    KernelProbe.Admission a = admit("4.6.7", Set.of(Feature.VXLAN_GPE), report);

    assertThat(a.config()).isEqualTo(report);
    assertThat(a.fallbacks()).isEmpty();
  }

  @Test
  void withoutFilteredConntrackDumpsTheAgentStartsAndSaysFlowsRestartAfterWholeDumps() {
    KernelProbe.Admission a = admit("5.4.0-150-generic", Set.of(Feature.CONNTRACK_FILTERED_DUMP), STEERING);

    assertThat(a.config()).isEqualTo(STEERING);
    assertThat(a.fallbacks()).singleElement().asString()
        .contains("Linux 5.4.0-150-generic lacks", "CTA_FILTER", "first in Linux 5.8", "whole");
  }

  @Test
  void withoutCounterCommentsTheAgentStartsAndSaysNoHostCountsPerServiceReadNothing() {
    KernelProbe.Admission a = admit("5.4.0", Set.of(Feature.NFT_OBJECT_COMMENTS), STEERING);

    assertThat(a.config()).isEqualTo(STEERING);
    assertThat(a.fallbacks()).singleElement().asString()
        .contains("named counters", "first in Linux 5.10 and nftables 0.9.7", "per-service drop counts");
  }

  @Test
  void withoutInetRouteChainsMarkModeRefusesAndSourceModeStarts() {
    assertThatThrownBy(() -> admit("5.1.21", Set.of(Feature.NFT_INET_ROUTE_CHAIN), MARK))
        .isInstanceOf(KernelProbe.MissingFeatures.class)
        .hasMessageContaining("Linux 5.1.21")
        .hasMessageContaining("route chain in an inet table")
        .hasMessageContaining("--rule-mode=mark")
        .hasMessageContaining("first in Linux 5.2 and nftables 0.8.3");

    KernelProbe.Admission a = admit("5.1.21", Set.of(Feature.NFT_INET_ROUTE_CHAIN), STEERING);
    assertThat(a.config()).isEqualTo(STEERING);
    assertThat(a.fallbacks()).isEmpty();
  }

  /** Every feature without a fallback. */
  @ParameterizedTest
  @EnumSource(value = Feature.class, names = {"VXLAN_GPE", "CONNTRACK_FILTERED_DUMP", "NFT_OBJECT_COMMENTS",
      "NFT_INET_ROUTE_CHAIN"}, mode = EnumSource.Mode.EXCLUDE)
  void eachMissingMustHaveRefusesToStartNamingItAndTheFirstVersionsThatHaveIt(Feature feature) {
    assertThatThrownBy(() -> admit("4.19.0", Set.of(feature), STEERING))
        .isInstanceOf(KernelProbe.MissingFeatures.class)
        .hasMessageContaining("Linux 4.19.0")
        .hasMessageContaining(feature.description())
        .hasMessageContaining("first in " + feature.firstVersions())
        .hasMessageContaining("Operation not supported");
  }

  @Test
  void aKernelLackingSeveralMustHavesNamesEachInOneMessage() {
    assertThatThrownBy(() -> admit("4.9.0", EnumSet.of(Feature.NFT_INET_NAT, Feature.NFT_FIB,
        Feature.RULE_PROTOCOL_FWMASK, Feature.VXLAN_GPE), STEERING))
        .isInstanceOf(KernelProbe.MissingFeatures.class)
        .hasMessageContaining(Feature.NFT_INET_NAT.description())
        .hasMessageContaining(Feature.NFT_FIB.description())
        .hasMessageContaining(Feature.RULE_PROTOCOL_FWMASK.description())
        .hasMessageNotContaining(Feature.VXLAN_GPE.description());
  }

  @Test
  void atStartupReturnsTheFallbackConfiguration() {
    PlanConfig admitted = KernelProbe.atStartup(STEERING, () -> kernel("4.6.7", Set.of(Feature.VXLAN_GPE)));

    assertThat(admitted.steering().mode()).isEqualTo(RemoteEndpoints.REPORT);
  }

  @Test
  void atStartupRefusesWhatTheKernelLacks() {
    assertThatThrownBy(() -> KernelProbe.atStartup(STEERING, () -> kernel("5.1.0", Set.of(Feature.NFT_INET_NAT))))
        .isInstanceOf(KernelProbe.MissingFeatures.class)
        .hasMessageContaining("first in Linux 5.2");
  }

  @Test
  void withoutAScratchNamespaceTheAgentStartsUnprobedAsConfigured() {
    PlanConfig admitted = KernelProbe.atStartup(MARK, () -> {
      throw new ScratchNamespace.Unavailable("cannot make a scratch network namespace: errno 1", true, null);
    });

    assertThat(admitted).isEqualTo(MARK);
  }

  @Test
  void theProbeAsksEveryFeatureOnce() {
    Map<Feature, Integer> asked = new java.util.EnumMap<>(Feature.class);
    KernelProbe.probe(new FeatureCheck() {
      @Override
      public Optional<String> missing(Feature feature) {
        asked.merge(feature, 1, Integer::sum);
        return Optional.empty();
      }

      @Override
      public String kernelRelease() {
        return "6.18.0";
      }
    });

    assertThat(asked.keySet()).containsExactly(Feature.values());
    assertThat(asked.values()).containsOnly(1);
  }
}

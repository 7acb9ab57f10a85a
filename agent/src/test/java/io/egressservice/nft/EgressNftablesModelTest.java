package io.egressservice.nft;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.EgressNftables.IpRange;
import io.egressservice.nft.EgressNftables.NftChange;
import io.egressservice.nft.EgressNftables.SnatElement;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** Pure decisions of the nft layer: coverage, merging, element encoding, validation. No root. */
class EgressNftablesModelTest {

  private static IpPrefix p(String s) {
    return IpPrefix.parse(s);
  }

  private static IpRange r(String first, String last) {
    return new IpRange(p(first), p(last));
  }

  private static List<IpPrefix> prefixes(String... s) {
    return Arrays.stream(s).map(IpPrefix::parse).toList();
  }

  @Test
  void sameCoverageMergesAdjacentAndOverlappingPrefixes() {
    // What nft prints after auto-merge (or after our own merge) for 10.0.0.0/24 + 10.0.1.0/24:
    List<IpRange> observed = List.of(IpRange.of(p("10.0.0.0/23")));
    assertThat(EgressNftables.sameCoverage(observed, prefixes("10.0.0.0/24", "10.0.1.0/24"))).isTrue();
    assertThat(EgressNftables.sameCoverage(observed, prefixes("10.0.0.0/23", "10.0.0.128/25"))).isTrue();
    assertThat(EgressNftables.sameCoverage(observed, prefixes("10.0.1.0/24", "10.0.0.0/24", "10.0.0.7"))).isTrue();
    // Observed as a range plus single addresses:
    List<IpRange> mixed = List.of(r("10.0.3.0", "10.0.3.5"), r("10.0.4.1", "10.0.4.1"));
    assertThat(EgressNftables.sameCoverage(mixed, prefixes(
        "10.0.3.0/30", "10.0.3.4/31", "10.0.4.1"))).isTrue();
    // Both families, order-independent:
    List<IpRange> dual = List.of(IpRange.of(p("fd00::/63")), IpRange.of(p("10.96.0.0/12")));
    assertThat(EgressNftables.sameCoverage(dual, prefixes("fd00:0:0:1::/64", "10.96.0.0/12", "fd00::/64"))).isTrue();
    assertThat(EgressNftables.sameCoverage(List.of(), List.of())).isTrue();
  }

  @Test
  void sameCoverageDetectsDifferences() {
    List<IpRange> observed = List.of(IpRange.of(p("10.0.0.0/23")));
    assertThat(EgressNftables.sameCoverage(observed, prefixes("10.0.0.0/24"))).isFalse();
    assertThat(EgressNftables.sameCoverage(observed, prefixes("10.0.0.0/24", "10.0.2.0/24"))).isFalse();
    assertThat(EgressNftables.sameCoverage(observed, prefixes("10.0.0.0/22"))).isFalse();
    assertThat(EgressNftables.sameCoverage(observed, List.of())).isFalse();
    assertThat(EgressNftables.sameCoverage(List.of(), prefixes("10.0.0.1"))).isFalse();
    // same numbers, other family
    assertThat(EgressNftables.sameCoverage(List.of(IpRange.of(p("::/96"))), prefixes("0.0.0.0/0"))).isFalse();
  }

  @Test
  void mergeProducesDisjointNonAdjacentRanges() {
    List<IpRange> merged = EgressNftables.merge(List.of(
        IpRange.of(p("10.0.1.0/24")),
        IpRange.of(p("10.0.0.0/24")),
        IpRange.of(p("10.0.0.128/25")),
        IpRange.of(p("10.0.5.5")),
        IpRange.of(p("10.0.5.6")),
        IpRange.of(p("255.255.255.255")),
        IpRange.of(p("fd00::/64"))));
    assertThat(merged).containsExactly(
        r("10.0.0.0", "10.0.1.255"),
        r("10.0.5.5", "10.0.5.6"),
        r("255.255.255.255", "255.255.255.255"),
        r("fd00::", "fd00::ffff:ffff:ffff:ffff"));
  }

  @Test
  void intervalElementsUsePrefixSingleAddressOrRange() {
    assertThat(IpRanges.intervalElement(r("10.0.0.0", "10.0.1.255")).toString())
        .isEqualTo("{\"prefix\":{\"addr\":\"10.0.0.0\",\"len\":23}}");
    assertThat(IpRanges.intervalElement(r("10.0.5.5", "10.0.5.5")).toString()).isEqualTo("\"10.0.5.5\"");
    assertThat(IpRanges.intervalElement(r("10.0.5.5", "10.0.5.6")).toString())
        .isEqualTo("{\"range\":[\"10.0.5.5\",\"10.0.5.6\"]}");
    assertThat(IpRanges.intervalElement(IpRange.of(p("0.0.0.0/0"))).toString())
        .isEqualTo("{\"prefix\":{\"addr\":\"0.0.0.0\",\"len\":0}}");
    assertThat(IpRanges.intervalElement(IpRange.of(p("fd00::/64"))).toString())
        .isEqualTo("{\"prefix\":{\"addr\":\"fd00::\",\"len\":64}}");
  }

  @Test
  void valuesAreValidated() {
    assertThatThrownBy(() -> new SnatElement(p("10.0.0.0/24"), p("1.2.3.4"), "ns/a"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("single addresses");
    assertThatThrownBy(() -> new SnatElement(p("10.0.0.1"), p("fd00::1"), "ns/a"))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("family");
    assertThatThrownBy(() -> new SnatElement(p("10.0.0.1"), p("1.2.3.4"), "x".repeat(129)))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("128 bytes");
    assertThatThrownBy(() -> r("10.0.0.2", "10.0.0.1")).isInstanceOf(IllegalArgumentException.class);
    SnatElement a = new SnatElement(p("10.0.0.1"), p("1.2.3.4"), "ns/a");
    SnatElement b = new SnatElement(p("10.0.0.1"), p("1.2.3.5"), "ns/a");
    assertThatThrownBy(() -> new NftChange(Set.of(a, b), Set.of(), Optional.empty()))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("10.0.0.1");
    assertThat(NftChange.none().isEmpty()).isTrue();
    assertThat(new NftChange(Set.of(), Set.of(), Optional.of(List.of())).isEmpty()).isFalse();
    assertThat(a.family()).isEqualTo(io.egressservice.ip.IpFamily.V4);
  }

  @Test
  void expectedRulesAreSixInOrderTheSteeringIdentityNatFirst() {
    assertThat(EgressTableLayout.expectedRuleExpressions()).hasSize(6);
    assertThat(EgressTableLayout.expectedRuleExpressions().get(0).toString()).contains("\"egress-vx\"")
        .contains("\"family\":\"ip\"");
    assertThat(EgressTableLayout.expectedRuleExpressions().get(1).toString()).contains("\"egress-vx\"")
        .contains("\"family\":\"ip6\"");
    assertThat(EgressTableLayout.expectedRuleExpressions().get(2).toString()).contains("@in_cluster_v4");
    assertThat(EgressTableLayout.expectedRuleExpressions().get(5).toString()).contains("@snat_v6");
  }
}

package io.egressservice.nft;

import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.kernel.linux.NftClient;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.EgressNftables.NftChange;
import io.egressservice.nft.EgressNftables.NftState;
import io.egressservice.nft.EgressNftables.ObserveStats;
import io.egressservice.nft.EgressNftables.SnatElement;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The generation-keyed listing cache against the kernel: what it returns must always equal a fresh
 * listing (an EgressNftables without a generation, which lists every time), whoever changed the table.
 */
class EgressNftablesCacheNetnsTest {
  @RegisterExtension
  final NftNamespace netns = new NftNamespace("nftc");
  private EgressNftables nft;
  private EgressNftables oracle;

  @BeforeEach
  void setUp() {
    nft = netns.closeLater(EgressNftables.open(NftClient.open(netns.thread()), LinuxKernel.generation(netns.thread())));
    oracle = netns.closeLater(EgressNftables.open(NftClient.open(netns.thread()),
        GenerationSource.unavailable("test oracle: always list")));
  }

  private static SnatElement snat(String src, String dst, String comment) {
    return new SnatElement(IpPrefix.parse(src), IpPrefix.parse(dst), comment);
  }

  private static final SnatElement A = snat("10.244.0.5", "192.0.2.10", "default/web");
  private static final SnatElement B = snat("10.244.0.6", "192.0.2.10", "default/web");
  private static final SnatElement C = snat("fd00:10:244::5", "2001:db8::10", "prod/api");

  private ObserveStats stats() {
    return nft.observeStats();
  }

  @Test
  void unchangedTableIsNotListedAgainAndTheCachedStateIsTheSame() {
    nft.apply(new NftChange(Set.of(A, B, C), Set.of(), Optional.of(List.of(IpPrefix.parse("10.96.0.0/12")))), true);
    NftState first = nft.observe();
    long listings = stats().listings();

    NftState second = nft.observe();
    NftState third = nft.observe();

    assertThat(second).isEqualTo(first).isEqualTo(third).isEqualTo(oracle.observe());
    assertThat(stats().listings()).isEqualTo(listings);
    assertThat(stats().cacheHits()).isGreaterThanOrEqualTo(2);
    assertThat(stats().generationFailures()).isZero();
  }

  @Test
  void applyReusesTheListingOfObserveAndItsExpectedStateMatchesTheKernel() {
    NftState cold = nft.observe();
    assertThat(cold.tablePresent()).isFalse();
    long listings = stats().listings();

    nft.apply(new NftChange(Set.of(A, B, C), Set.of(), Optional.of(List.of(IpPrefix.parse("10.96.0.0/12")))), true);
    assertThat(stats().listings()).as("apply planned on observe's listing").isEqualTo(listings);
    assertThat(nft.observe()).as("expected state after our own commit").isEqualTo(oracle.observe());

    // A change, a deletion, an in-cluster replacement: still no listing, still what the kernel has.
    SnatElement a2 = snat("10.244.0.5", "192.0.2.99", "default/web");
    nft.apply(new NftChange(Set.of(a2), Set.of(B), Optional.of(List.of(IpPrefix.parse("10.96.0.0/12"),
        IpPrefix.parse("fd02::/112")))), true);
    nft.apply(NftChange.none(), true);
    assertThat(nft.observe()).isEqualTo(oracle.observe());
    assertThat(nft.observe().snat()).containsExactlyInAnyOrder(a2, C);
    assertThat(stats().listings()).isEqualTo(listings);

    // A repair (someone flushed our chain): ensureBase refills it; the expected state is intact again.
    netns.ns().exec("nft", "flush", "chain", "inet", "egress_service_agent", "postrouting");
    assertThat(nft.observe().baseIntact()).isFalse();
    nft.apply(NftChange.none(), true);
    assertThat(nft.observe()).isEqualTo(oracle.observe());
    assertThat(nft.observe().baseIntact()).isTrue();
  }

  @Test
  void elementDeletedByHandAfterACachedObserveIsSeenByTheNextObserve() {
    nft.apply(new NftChange(Set.of(A, B, C), Set.of(), Optional.empty()), true);
    nft.observe();
    assertThat(nft.observe().snat()).contains(A); // from the cache

    netns.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.244.0.5 }");

    assertThat(nft.observe().snat()).containsExactlyInAnyOrder(B, C);
    // And apply, planning on its own (possibly cached) observation, puts it back.
    nft.apply(new NftChange(Set.of(A), Set.of(), Optional.empty()), true);
    assertThat(oracle.observe().snat()).containsExactlyInAnyOrder(A, B, C);
  }

  @Test
  void changeToAnotherTableOnlyCostsOneListing() {
    nft.apply(new NftChange(Set.of(A), Set.of(), Optional.empty()), true);
    nft.observe();
    long listings = stats().listings();
    netns.ns().exec("nft", "add", "table", "ip", "foreign");
    assertThat(nft.observe().snat()).containsExactly(A);
    assertThat(stats().listings()).isEqualTo(listings + 1);
    nft.observe();
    assertThat(stats().listings()).isEqualTo(listings + 1);
  }

  @Test
  void whenTheGenerationCannotBeReadEveryObserveListsAndStillSeesEverything() {
    try (EgressNftables noGen = EgressNftables.open(NftClient.open(netns.thread()), () -> {
      throw new IllegalStateException("injected GETGEN failure");
    })) {
      noGen.apply(new NftChange(Set.of(A, B), Set.of(), Optional.empty()), true);
      noGen.observe();
      noGen.observe();
      ObserveStats s = noGen.observeStats();
      assertThat(s.cacheHits()).isZero();
      assertThat(s.listings()).isEqualTo(3); // apply's, then one per observe
      assertThat(s.generationFailures()).isGreaterThanOrEqualTo(3);

      netns.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.244.0.5 }");
      assertThat(noGen.observe().snat()).containsExactly(B);
      noGen.apply(new NftChange(Set.of(A, B), Set.of(), Optional.empty()), true);
      assertThat(oracle.observe().snat()).containsExactlyInAnyOrder(A, B);
    }
  }
}

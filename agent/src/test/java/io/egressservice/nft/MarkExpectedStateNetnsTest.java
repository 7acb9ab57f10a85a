package io.egressservice.nft;

import io.egressservice.kernel.GenerationSource;
import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.kernel.linux.NftClient;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.MarkNftables.MarkElement;
import io.egressservice.nft.MarkNftables.MarkPlan;
import io.egressservice.nft.MarkNftables.MarkState;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The state a full mark transaction is expected to leave, which the listing cache keeps instead of listing the table:
 * for every transition, the next plan's commands from it are those from a real listing of the kernel then.
 */
class MarkExpectedStateNetnsTest {
  static final long MASK = 0x3f000000L;
  @RegisterExtension
  final NftNamespace kernel = new NftNamespace("mexp");

  static Set<MarkElement> elements(int n, long table, String comment) {
    Set<MarkElement> out = new HashSet<>();
    for (int i = 1; i <= n; i++) {
      out.add(new MarkElement(IpPrefix.parse("10.128." + (i >> 8) + "." + (i & 0xff)), table, comment));
    }
    out.add(new MarkElement(IpPrefix.parse("fd00::" + Integer.toHexString(n)), table, comment));
    return out;
  }

  /** Plans in an order that visits every kind of change: chains added, rewritten, removed, reply objects, none. */
  static List<MarkPlan> transitions() {
    return List.of(
        new MarkPlan(MASK, Map.of(100L, 0x01000000L), elements(30, 100, "default/web")),
        new MarkPlan(MASK, Map.of(100L, 0x02000000L, 101L, 0x03000000L), elements(20, 101, "default/web"),
            Set.of("up2")),
        new MarkPlan(MASK, Map.of(101L, 0x03000000L), elements(25, 101, "shop/api"), Set.of("up2", "up3")),
        new MarkPlan(0x0f000000L, Map.of(101L, 0x03000000L), elements(25, 101, "shop/api")),
        MarkPlan.none(),
        new MarkPlan(MASK, Map.of(100L, 0x01000000L), elements(3, 100, "default/web"), Set.of("up1")));
  }

  @Test
  void whatAFullMarkTransactionIsExpectedToLeavePlansLikeAListingOfTheKernel() {
    kernel.ns().exec("nft", "add", "table", "inet", EgressNftables.TABLE);
    try (MarkNftables marks = MarkNftables.open(NftClient.open(kernel.thread()), LinuxKernel.generation(kernel.thread()));
        MarkNftables lister = MarkNftables.open(NftClient.open(kernel.thread()), GenerationSource.unavailable("always list"))) {
      List<MarkPlan> plans = transitions();
      for (int i = 0; i < plans.size(); i++) {
        MarkPlan plan = plans.get(i);
        MarkState observed = marks.observe();
        marks.runInBatches(MarkNftables.commands(observed, plan), Optional.of(MarkNftables.outcome(observed, plan)),
            () -> {});
        long listings = marks.observeStats().listings();

        MarkState kept = marks.observe();
        MarkState listed = lister.observe();

        assertThat(marks.observeStats().listings()).as("kept, not listed, after plan " + i).isEqualTo(listings);
        assertThat(kept.elements()).isEqualTo(listed.elements());
        assertThat(kept.maps()).isEqualTo(listed.maps());
        assertThat(kept.hookChains()).isEqualTo(listed.hookChains());
        assertThat(kept.networkChains()).isEqualTo(listed.networkChains());
        assertThat(kept.replyIfaces()).isEqualTo(listed.replyIfaces());
        for (int j = 0; j < plans.size(); j++) {
          assertThat(MarkNftables.commands(kept, plans.get(j))).as("from plan " + i + " to plan " + j)
              .isEqualTo(MarkNftables.commands(listed, plans.get(j)));
        }
      }
    }
  }
}

package io.egressservice.dataplane;

import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.kernel.linux.NftClient;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.EgressNftables;
import io.egressservice.kernel.GenerationSource;
import io.egressservice.nft.MarkNftables;
import io.egressservice.nft.MarkNftables.MarkState;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.MarkEntry;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.TableRef;
import io.egressservice.testing.NetnsFixture;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** Reconcile with the nft listing cache: a no-change reconcile does not list, drift is still repaired. */
class DataplaneCacheNetnsTest {
  static final int PRIORITY = 5000;
  static final int PROTOCOL = 201;
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("dpc");

  static DesiredState desired(int n) {
    ObjectRef svc = new ObjectRef("default", "web");
    IpPrefix lb = IpPrefix.parse("192.0.2.10");
    List<RuleSpec> rules = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      IpPrefix src = IpPrefix.parse("10.244." + (i >> 8) + "." + (i & 0xff));
      rules.add(new RuleSpec(IpFamily.V4, PRIORITY, Optional.of(src), Optional.empty(), TableRef.of(100), Optional.of(svc)));
      snat.add(new SnatEntry(src, lb, svc));
    }
    return DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL).rules(rules).snat(snat)
        .inCluster(List.of(IpPrefix.parse("10.96.0.0/12"))).build();
  }

  @Test
  void noChangeReconcileUsesTheCacheAndAHandDeletedElementIsRestored() {
    DesiredState plan = desired(50);
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name())), PRIORITY, PROTOCOL)) {
      assertThat(dp.reconcile(plan).succeeded()).isTrue();
      long listings = dp.nftObserveStats().listings();
      assertThat(dp.reconcile(plan).applied()).isEmpty();
      assertThat(dp.reconcile(plan).applied()).isEmpty();
      assertThat(dp.nftObserveStats().listings()).as("no-change reconciles list nothing").isEqualTo(listings);

      kernel.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.244.0.7 }");
      ApplyReport repair = dp.reconcile(plan);

      assertThat(repair.applied()).extracting(Change::toString).containsExactly("+ snat 10.244.0.7 -> 192.0.2.10");
      assertThat(kernel.ns().exec("nft", "list", "map", "inet", "egress_service_agent", "snat_v4"))
          .contains("10.244.0.7 comment \"default/web\" : 192.0.2.10");
      assertThat(dp.reconcile(plan).applied()).isEmpty();
    }
  }

  @Test
  void aSnatChangeOfOursDoesNotMakeTheNextReconcileListTheTable() {
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name())), PRIORITY, PROTOCOL)) {
      assertThat(dp.reconcile(desired(50)).succeeded()).isTrue();
      assertThat(dp.reconcile(desired(50)).applied()).isEmpty();
      long snatListings = dp.nftObserveStats().listings();
      long markListings = dp.markObserveStats().listings();

      // Endpoint churn: every reconcile commits one SNAT transaction, which moves the generation.
      for (int n = 51; n <= 53; n++) {
        assertThat(dp.reconcile(desired(n)).applied()).hasSize(2); // its rule and its SNAT element
      }
      assertThat(dp.reconcile(desired(53)).applied()).isEmpty();

      assertThat(dp.nftObserveStats().listings()).as("SNAT part: the expected state is kept").isEqualTo(snatListings);
      assertThat(dp.markObserveStats().listings()).as("mark part: untouched by a SNAT transaction")
          .isEqualTo(markListings);
      assertThat(kernel.ns().exec("nft", "list", "map", "inet", "egress_service_agent", "snat_v4"))
          .contains("10.244.0.53 comment \"default/web\" : 192.0.2.10");
    }
  }

  @Test
  void aSnatChangeInSeveralTransactionsDoesNotMakeTheMarkPartListTheTable() {
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name())), PRIORITY, PROTOCOL)) {
      assertThat(dp.reconcile(desired(50)).succeeded()).isTrue();
      assertThat(dp.reconcile(desired(50)).applied()).isEmpty();
      long markListings = dp.markObserveStats().listings();

      // More SNAT elements than one transaction adds: they go in chunks, each its own commit.
      int n = io.egressservice.nft.EgressNftables.MAX_ELEMENTS_PER_TRANSACTION + 500;
      assertThat(dp.reconcile(desired(n)).succeeded()).isTrue();
      assertThat(dp.reconcile(desired(n)).applied()).isEmpty();

      assertThat(dp.markObserveStats().listings()).as("mark part: told of every SNAT commit of ours")
          .isEqualTo(markListings);
    }
  }

  @Test
  void aChangeByHandIsReadAgainOnceByEachPartOfTheTable() {
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name())), PRIORITY, PROTOCOL)) {
      assertThat(dp.reconcile(desired(50)).succeeded()).isTrue();
      assertThat(dp.reconcile(desired(50)).applied()).isEmpty();
      long snat = dp.nftObserveStats().listings();
      long marks = dp.markObserveStats().listings();

      kernel.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.244.0.7 }");
      assertThat(dp.reconcile(desired(50)).applied()).extracting(Change::toString)
          .containsExactly("+ snat 10.244.0.7 -> 192.0.2.10");

      assertThat(dp.nftObserveStats().listings()).as("the SNAT part read the table once").isEqualTo(snat + 1);
      assertThat(dp.markObserveStats().listings()).as("the mark part read the table once").isEqualTo(marks + 1);
    }
  }

  /** Mark mode: {@code n} sources of one service in table 100, and {@code replyIfaces} to mark replies on. */
  static DesiredState markMode(int n, long mark) {
    ObjectRef svc = new ObjectRef("default", "web");
    IpPrefix lb = IpPrefix.parse("192.0.2.10");
    List<MarkEntry> marks = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      IpPrefix src = IpPrefix.parse("10.244." + (i >> 8) + "." + (i & 0xff));
      marks.add(new MarkEntry(src, 100, mark, svc));
      snat.add(new SnatEntry(src, lb, svc));
    }
    marks.sort(MarkEntry.ORDER);
    snat.sort(SnatEntry.ORDER);
    List<RuleSpec> rules = List.of(new RuleSpec(IpFamily.V4, PRIORITY, Optional.empty(), Optional.empty(),
        TableRef.of(100), Optional.empty(), OptionalLong.of(mark)));
    return DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL).rules(rules).snat(snat)
        .inCluster(List.of(IpPrefix.parse("10.96.0.0/12"))).ruleMode(RuleMode.MARK)
        .markMask(PlanConfig.DEFAULT_MARK_MASK).marks(marks).networkMarks(Map.of(100L, mark)).build();
  }

  @Test
  void aFullMarkReconcileInSeveralTransactionsKeepsWhatItWroteInsteadOfListingTheTable() {
    int n = EgressNftables.MAX_ELEMENTS_PER_TRANSACTION + 500;
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name())), PRIORITY, PROTOCOL)) {
      // A cold start: the table is created by the SNAT part, then the mark objects and elements in chunks.
      assertThat(dp.reconcile(markMode(n, 0x01000000L)).failures()).isEmpty();
      long listings = dp.nftObserveStats().listings() + dp.markObserveStats().listings();

      assertThat(dp.reconcile(markMode(n, 0x01000000L)).applied()).as("nothing left to do").isEmpty();
      // The network's mark changes (its chain is rewritten) and a source goes: a full mark transaction again.
      assertThat(dp.reconcile(markMode(n - 1, 0x02000000L)).failures()).isEmpty();
      assertThat(dp.reconcile(markMode(n - 1, 0x02000000L)).applied()).as("nothing left to do").isEmpty();

      assertThat(dp.nftObserveStats().listings() + dp.markObserveStats().listings())
          .as("the mark part kept its own result: no listing of the whole table after it").isEqualTo(listings);
      MarkState kept = dp.observe().marks();
      try (MarkNftables fresh = MarkNftables.open(NftClient.open(((LinuxKernel) dp.kernel()).thread()), GenerationSource.unavailable("always list"))) {
        MarkState listed = fresh.observe();
        assertThat(kept.elements()).isEqualTo(listed.elements());
        assertThat(kept.networkChains()).isEqualTo(listed.networkChains());
        assertThat(kept.maps()).isEqualTo(listed.maps());
        assertThat(kept.hookChains()).isEqualTo(listed.hookChains());
      }
      String map = kernel.ns().exec("nft", "list", "map", "inet", "egress_service_agent", "mark_v4");
      assertThat(map.split("jump mark_t100").length - 1).isEqualTo(n - 1);
    }
  }

  @Test
  void aMarkElementDeletedByHandAfterAFullMarkReconcileIsSeenAndRestored() {
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name())), PRIORITY, PROTOCOL)) {
      assertThat(dp.reconcile(markMode(20, 0x01000000L)).failures()).isEmpty();
      assertThat(dp.reconcile(markMode(20, 0x01000000L)).applied()).isEmpty();
      long marks = dp.markObserveStats().listings();

      kernel.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "mark_v4", "{ 10.244.0.7 }");
      assertThat(dp.reconcile(markMode(20, 0x01000000L)).applied()).extracting(Change::description)
          .anyMatch(d -> d.startsWith("mark 10.244.0.7"));
      assertThat(dp.reconcile(markMode(20, 0x01000000L)).applied()).isEmpty();
      assertThat(dp.markObserveStats().listings()).as("the change by hand was seen by one read of the mark part")
          .isEqualTo(marks + 1);
    }
  }

  @Test
  void withoutAGenerationReconcileStillConvergesAndRepairs() {
    DesiredState plan = desired(20);
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name()),
        t -> GenerationSource.unavailable("injected")), PRIORITY, PROTOCOL)) {
      assertThat(dp.reconcile(plan).succeeded()).isTrue();
      assertThat(dp.reconcile(plan).applied()).isEmpty();
      kernel.ns().exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.244.0.3 }");
      assertThat(dp.reconcile(plan).applied()).extracting(Change::toString)
          .containsExactly("+ snat 10.244.0.3 -> 192.0.2.10");
      assertThat(dp.nftObserveStats().cacheHits()).isZero();
    }
  }
}

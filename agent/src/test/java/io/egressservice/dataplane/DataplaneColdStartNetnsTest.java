package io.egressservice.dataplane;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.EgressNftables;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.TableRef;
import io.egressservice.testing.NetnsFixture;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** A cold start larger than one nft transaction: applied in bounded chunks, one refused element refused alone. */
class DataplaneColdStartNetnsTest {
  static final int PRIORITY = 5000;
  static final int PROTOCOL = 201;
  static final IpPrefix LB = IpPrefix.parse("192.0.2.10");
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("dltc");

  static IpPrefix endpoint(int i) {
    return IpPrefix.host(new byte[] {10, (byte) 244, (byte) (i >> 8), (byte) i});
  }

  static DesiredState desired(int n) {
    List<RuleSpec> rules = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      ObjectRef svc = new ObjectRef("default", "svc" + i / 10);
      rules.add(new RuleSpec(IpFamily.V4, PRIORITY, Optional.of(endpoint(i)), Optional.empty(), TableRef.of(100),
          Optional.of(svc)));
      snat.add(new SnatEntry(endpoint(i), LB, svc));
    }
    rules.sort(RuleSpec.ORDER);
    snat.sort(SnatEntry.ORDER);
    return DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL).rules(rules).snat(snat)
        .inCluster(List.of(IpPrefix.parse("10.96.0.0/12"))).build();
  }

  @Test
  void anElementTheKernelRefusesFailsAloneAndEverythingElseIsApplied() {
    int n = EgressNftables.MAX_ELEMENTS_PER_TRANSACTION + 1000;
    // A generation that never moves: the listing taken here is reused below, blind to the element added by hand,
    // so the cold apply adds an element the kernel then refuses (EEXIST: same key, another value).
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name()), t -> () -> 1L), PRIORITY, PROTOCOL)) {
      assertThat(dp.reconcile(desired(1)).succeeded()).isTrue();
      dp.observe();
      // The first element of the first chunk: every transaction that holds it is tried before any commit (after
      // which the listing would be taken again, and the element replaced).
      IpPrefix bad = endpoint(2);
      kernel.ns().exec("nft", "add", "element", "inet", "egress_service_agent", "snat_v4", "{ " + bad.addressText()
          + " : 198.51.100.1 }");

      ApplyReport report = dp.reconcile(desired(n));

      assertThat(report.failures()).hasSize(1);
      assertThat(report.failures().get(0)).contains("snat " + bad.addressText() + " -> 192.0.2.10");
      assertThat(report.applied()).noneMatch(c -> c.description().startsWith("snat " + bad.addressText() + " "));
      String map = kernel.ns().exec("nft", "list", "map", "inet", "egress_service_agent", "snat_v4");
      assertThat(map.split(" : 192\\.0\\.2\\.10").length - 1).isEqualTo(n - 1);
      assertThat(kernel.ns().exec("ip", "rule", "show").lines().filter(l -> l.contains("lookup 100")).count())
          .isEqualTo(n);
    }
  }

  @Test
  void inMarkModeAColdStartLargerThanOneTransactionAppliesEveryElement() {
    int n = EgressNftables.MAX_ELEMENTS_PER_TRANSACTION * 2 + 10;
    List<io.egressservice.plan.MarkEntry> marks = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    for (int i = 1; i <= n; i++) {
      ObjectRef svc = new ObjectRef("default", "svc" + i / 10);
      marks.add(new io.egressservice.plan.MarkEntry(endpoint(i), 100, 0x01000000L, svc));
      snat.add(new SnatEntry(endpoint(i), LB, svc));
    }
    marks.sort(io.egressservice.plan.MarkEntry.ORDER);
    snat.sort(SnatEntry.ORDER);
    List<RuleSpec> rules = List.of(new RuleSpec(IpFamily.V4, PRIORITY, Optional.empty(), Optional.empty(),
        TableRef.of(100), Optional.empty(), java.util.OptionalLong.of(0x01000000L)));
    DesiredState s = DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL).rules(rules).snat(snat)
        .inCluster(List.of(IpPrefix.parse("10.96.0.0/12")))
        .ruleMode(io.egressservice.model.RuleMode.MARK)
        .markMask(io.egressservice.model.PlanConfig.DEFAULT_MARK_MASK).marks(marks)
        .networkMarks(java.util.Map.of(100L, 0x01000000L)).build();
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(kernel.ns().name())), PRIORITY, PROTOCOL)) {
      ApplyReport report = dp.reconcile(s);
      assertThat(report.failures()).isEmpty();
      String map = kernel.ns().exec("nft", "list", "map", "inet", "egress_service_agent", "mark_v4");
      assertThat(map.split("jump mark_t100").length - 1).isEqualTo(n);
      assertThat(dp.reconcile(s).applied()).isEmpty();
    }
  }
}

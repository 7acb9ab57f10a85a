package io.egressservice.dataplane;

import io.egressservice.cli.KernelPlan;
import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpPrefix;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.objects.ObjectFiles;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.SnatEntry;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * The dataplane against a real kernel, in a throwaway namespace, with iproute2 and nft as the oracle:
 * what the plan says is exactly what {@code ip -j rule show} and {@code nft -j list} print.
 */
class DataplaneNetnsTest {
  static final String NODE = "node-a";
  static final PlanConfig CONFIG = PlanConfig.defaults().withCidrs(
      List.of(), List.of(IpPrefix.parse("172.30.0.0/16"), IpPrefix.parse("fd02::/112")), List.of());

  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("dp");
  Netns ns;
  Dataplane dp;
  @TempDir Path tmp;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    dp = kernel.closeLater(Dataplane.open(LinuxKernel.open(Optional.of(ns.name())), CONFIG.priority(), CONFIG.ruleProtocol()));
  }

  static ClusterObjects examples() throws Exception {
    return ObjectFiles.load(List.of(Path.of("examples")), note -> {});
  }

  DesiredState planFor(ClusterObjects objects) {
    return KernelPlan.of(dp, objects, NODE, CONFIG).desired();
  }


  /** Owned rules as iproute2 prints them: "inet 5000 from 10.128.0.5 to - table 100". */
  Set<String> ipRules() {
    Set<String> out = new TreeSet<>();
    for (String flag : List.of("-4", "-6")) {
      for (JsonNode r : ns.json("ip", "-j", flag, "rule", "show")) {
        if (!"201".equals(r.path("protocol").asText()) && r.path("protocol").asInt(-1) != 201) {
          continue;
        }
        out.add(ruleLine(flag.equals("-4") ? "inet" : "inet6", r));
      }
    }
    return out;
  }

  static String ruleLine(String family, JsonNode r) {
    String src = r.path("src").asText("all");
    if (r.has("srclen") && !src.equals("all") && r.path("srclen").asInt() != (family.equals("inet") ? 32 : 128)) {
      src += "/" + r.path("srclen").asInt();
    }
    String dst = r.has("dst") ? r.path("dst").asText() + (r.has("dstlen") ? "/" + r.path("dstlen").asInt() : "") : "-";
    return family + " " + r.path("priority").asInt() + " from " + src + " to " + dst + " table " + r.path("table").asText();
  }

  static Set<String> expectedRules(DesiredState s) {
    Set<String> out = new TreeSet<>();
    for (RuleSpec r : s.rules()) {
      String table = r.table().id().getAsLong() == 254 ? "main" : Long.toString(r.table().id().getAsLong());
      out.add(r.family().iproute2Name() + " " + r.priority() + " from " + r.from().map(IpPrefix::toString).orElse("all")
          + " to " + r.to().map(IpPrefix::cidrText).orElse("-") + " table " + table);
    }
    return out;
  }

  /** SNAT elements as nft prints them: "10.128.0.5 -> 5.5.5.5 default/web". */
  Set<String> nftElements() {
    Set<String> out = new TreeSet<>();
    JsonNode listing = ns.json("nft", "-j", "list", "table", "inet", "egress_service_agent");
    for (JsonNode item : listing.path("nftables")) {
      JsonNode map = item.path("map");
      if (map.isMissingNode() || !map.path("name").asText().startsWith("snat_")) {
        continue;
      }
      for (JsonNode elem : map.path("elem")) {
        JsonNode key = elem.get(0).path("elem");
        out.add(key.path("val").asText() + " -> " + elem.get(1).asText() + " " + key.path("comment").asText());
      }
    }
    return out;
  }

  static Set<String> expectedElements(DesiredState s) {
    Set<String> out = new TreeSet<>();
    for (SnatEntry e : s.snat()) {
      out.add(e.source() + " -> " + e.to() + " " + e.service());
    }
    return out;
  }

  @Test
  void applyOfTheExamplesGivesExactlyThePlanAndReapplyChangesNothing() throws Exception {
    DesiredState plan = planFor(examples());

    ApplyReport first = dp.reconcile(plan);

    assertThat(first.succeeded()).isTrue();
    assertThat(ipRules()).isEqualTo(expectedRules(plan));
    assertThat(nftElements()).isEqualTo(expectedElements(plan)).isNotEmpty();
    ApplyReport second = dp.reconcile(plan);
    assertThat(second.applied()).isEmpty();
    assertThat(Differ.diff(plan, dp.observe()).isEmpty()).isTrue();
  }

  @Test
  void removingAnEndpointRemovesExactlyItsRuleAndElement() throws Exception {
    DesiredState before = planFor(examples());
    dp.reconcile(before);
    Set<String> rulesBefore = ipRules();
    Set<String> elementsBefore = nftElements();

    Path dir = copyExamplesWithout("10.128.0.9");
    DesiredState after = planFor(ObjectFiles.load(List.of(dir), n -> {}));
    ApplyReport report = dp.reconcile(after);

    assertThat(report.applied()).extracting(Change::toString).containsExactlyInAnyOrder(
        "- snat 10.128.0.9 -> 5.5.5.5", "- rule 5000: from 10.128.0.9 lookup 100 proto 201");
    Set<String> expectedRules = new TreeSet<>(rulesBefore);
    expectedRules.remove("inet 5000 from 10.128.0.9 to - table 100");
    assertThat(ipRules()).isEqualTo(expectedRules);
    Set<String> expectedElements = new TreeSet<>(elementsBefore);
    expectedElements.remove("10.128.0.9 -> 5.5.5.5 default/web");
    assertThat(nftElements()).isEqualTo(expectedElements);
  }

  private Path copyExamplesWithout(String address) throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("objects"));
    for (Path f : Files.list(Path.of("examples")).toList()) {
      String text = Files.readString(f);
      text = text.replace("  - addresses: [" + address + "]\n    nodeName: node-a\n"
          + "    conditions: {ready: false, serving: true, terminating: true}\n", "");
      Files.writeString(dir.resolve(f.getFileName()), text);
    }
    assertThat(Files.readString(dir.resolve("web.yaml"))).doesNotContain(address);
    return dir;
  }

  /** Our throw routes as iproute2 prints them, any table: "inet 100 throw 10.128.0.0/23". */
  Set<String> ownedRoutes() {
    Set<String> out = new TreeSet<>();
    for (String flag : List.of("-4", "-6")) {
      for (JsonNode r : ns.json("ip", "-j", flag, "route", "show", "table", "all")) {
        if ("201".equals(r.path("protocol").asText())) {
          out.add((flag.equals("-4") ? "inet" : "inet6") + " " + r.path("table").asText() + " " + r.path("type").asText()
              + " " + IpPrefix.parse(r.path("dst").asText()));
        }
      }
    }
    return out;
  }

  static Set<String> expectedRoutes(DesiredState s) {
    Set<String> out = new TreeSet<>();
    s.routes().forEach(r -> out.add(r.family().iproute2Name() + " " + r.table().name() + " throw " + r.to()));
    return out;
  }

  /**
   * In the kernel: the in-cluster exemption is throw routes in the service tables (both
   * families), no rule at P-1; a node that still has the old P-1 rules gets the routes first, then loses
   * the rules; someone else's routes in the same table survive apply, drift repair and cleanup.
   */
  @Test
  void inClusterDestinationsAreThrowRoutesInTheServiceTablesAndTheOldP1RulesGoAfterThem()
      throws Exception {
    ns.exec("ip", "link", "set", "lo", "up");
    ns.exec("ip", "route", "add", "blackhole", "default", "table", "100"); // the admin's, protocol boot
    ns.exec("ip", "route", "add", "throw", "10.77.0.0/16", "table", "100", "proto", "static"); // a throw, not ours
    // What an older agent left: in-cluster rules at P-1 for all sources.
    ns.exec("ip", "rule", "add", "priority", "4999", "to", "10.128.0.0/23", "lookup", "main", "protocol", "201");
    ns.exec("ip", "-6", "rule", "add", "priority", "4999", "to", "fd01:0:0:1::/64", "lookup", "main", "protocol", "201");
    DesiredState plan = planFor(examples());
    assertThat(plan.routes()).isNotEmpty();

    ApplyReport first = dp.reconcile(plan);

    assertThat(first.succeeded()).as("failures: %s", first.failures()).isTrue();
    assertThat(ipRules()).isEqualTo(expectedRules(plan)).noneMatch(r -> r.contains(" 4999 "));
    assertThat(ownedRoutes()).isEqualTo(expectedRoutes(plan)).contains(
        "inet 100 throw 10.128.0.0/23", "inet 100 throw 192.168.1.10/31", "inet 101 throw 172.30.0.0/16",
        "inet6 100 throw fd01:0:0:1::/64", "inet6 100 throw 2001:db8:1::10/127");
    List<String> order = first.applied().stream().map(Change::toString).toList();
    int lastRouteAdd = -1;
    int firstOldRuleDelete = Integer.MAX_VALUE;
    for (int i = 0; i < order.size(); i++) {
      if (order.get(i).startsWith("+ route ")) {
        lastRouteAdd = i;
      }
      if (order.get(i).startsWith("- rule 4999")) {
        firstOldRuleDelete = Math.min(firstOldRuleDelete, i);
      }
    }
    assertThat(lastRouteAdd).as("routes added before the old rules go: %s", order).isLessThan(firstOldRuleDelete);
    assertThat(dp.reconcile(plan).applied()).isEmpty();

    // Drift: one of ours deleted by hand, a stray one of ours added: both repaired, the rest untouched.
    ns.exec("ip", "route", "del", "throw", "10.128.0.0/23", "table", "100", "proto", "201");
    ns.exec("ip", "route", "add", "throw", "10.66.0.0/16", "table", "100", "proto", "201");
    assertThat(dp.reconcile(plan).applied()).extracting(Change::toString).containsExactlyInAnyOrder(
        "+ route throw 10.128.0.0/23 table 100 proto 201", "- route throw 10.66.0.0/16 table 100 proto 201");
    assertThat(ownedRoutes()).isEqualTo(expectedRoutes(plan));

    dp.cleanup();

    assertThat(ownedRoutes()).isEmpty();
    assertThat(ipRules()).isEmpty();
    assertThat(ns.json("ip", "-j", "route", "show", "table", "100")).hasSize(2);
    assertThat(ns.exec("ip", "route", "show", "table", "100"))
        .contains("blackhole default").contains("throw 10.77.0.0/16 proto static");
  }

  @Test
  void someoneElsesRouteToAnInClusterPrefixInTheServiceTableIsLeftAloneAndIsNoFailure() throws Exception {
    ns.exec("ip", "route", "add", "blackhole", "10.128.0.0/23", "table", "100"); // the admin's, same destination
    DesiredState plan = planFor(examples());

    ApplyReport first = dp.reconcile(plan);
    ApplyReport second = dp.reconcile(plan);

    assertThat(first.failures()).isEmpty();
    assertThat(second.failures()).isEmpty();
    assertThat(second.applied()).isEmpty();
    assertThat(ns.exec("ip", "route", "show", "table", "100")).contains("blackhole 10.128.0.0/23")
        .doesNotContain("throw 10.128.0.0/23").contains("throw 192.168.1.10/31 proto 201");
    assertThat(ipRules()).isEqualTo(expectedRules(plan));
  }

  @Test
  void driftIsRepairedAndForeignObjectsSurviveApplyAndCleanup() throws Exception {
    DesiredState plan = planFor(examples());
    ns.exec("ip", "rule", "add", "priority", "5000", "from", "10.128.0.5", "lookup", "300", "protocol", "static");
    ns.exec("ip", "rule", "add", "priority", "4999", "to", "10.99.0.0/16", "lookup", "main");
    ns.exec("nft", "add", "table", "inet", "other");
    ns.exec("nft", "add", "chain", "inet", "other", "c", "{ type filter hook output priority 0; }");
    ns.exec("nft", "add", "set", "inet", "other", "s", "{ type ipv4_addr; }");
    dp.reconcile(plan);

    // Drift: an owned rule deleted by hand, a stale one added with our protocol, an element deleted.
    ns.exec("ip", "rule", "del", "priority", "5000", "from", "10.128.0.5", "lookup", "100", "protocol", "201");
    ns.exec("ip", "rule", "add", "priority", "5000", "from", "10.128.0.77", "lookup", "100", "protocol", "201");
    ns.exec("nft", "delete", "element", "inet", "egress_service_agent", "snat_v4", "{ 10.128.0.5 }");
    ApplyReport repair = dp.reconcile(plan);

    assertThat(repair.applied()).extracting(Change::toString).containsExactlyInAnyOrder(
        "+ rule 5000: from 10.128.0.5 lookup 100 proto 201",
        "+ snat 10.128.0.5 -> 5.5.5.5",
        "- rule 5000: from 10.128.0.77 lookup 100 proto 201");
    assertThat(ipRules()).isEqualTo(expectedRules(plan));
    assertThat(nftElements()).isEqualTo(expectedElements(plan));
    assertThat(ns.exec("ip", "rule", "show")).contains("5000:\tfrom 10.128.0.5 lookup 300 proto static")
        .contains("4999:\tfrom all to 10.99.0.0/16 lookup main");

    dp.cleanup();

    assertThat(ipRules()).isEmpty();
    assertThat(ns.tryExec("nft", "list", "table", "inet", "egress_service_agent").exitCode()).isNotZero();
    assertThat(ns.exec("ip", "rule", "show")).contains("5000:\tfrom 10.128.0.5 lookup 300 proto static")
        .contains("4999:\tfrom all to 10.99.0.0/16 lookup main");
    assertThat(ns.exec("nft", "list", "table", "inet", "other")).contains("chain c").contains("set s");
  }

  /**
   * An uninstall that the grace period cuts short must not leave an endpoint mapped to a service's LB IP for
   * whoever gets its address next: cleanup removes the SNAT table (the identity) before the rules and routes.
   */
  @Test
  void cleanupRemovesTheLbIpIdentityBeforeTheRulesAndRoutes() throws Exception {
    DesiredState plan = planFor(examples());
    dp.reconcile(plan);

    ApplyReport cleanup = dp.cleanup();

    assertThat(cleanup.failures()).isEmpty();
    assertThat(cleanup.applied()).first().asString().contains("nft table inet egress_service_agent (")
        .contains("SNAT element(s)");
    assertThat(cleanup.applied()).extracting(Change::toString).anyMatch(c -> c.startsWith("- rule"));
    assertThat(ipRules()).isEmpty();
  }

  /**
   * A rule at our priority and protocol that carries a selector more than the one we
   * want (ipproto and a port, tos, a uid range, the l3mdev flag, ...) matches only part of the pod's traffic;
   * the rest left through main. It is someone's edit of our rule, not ours: it is replaced by the exact rule.
   */
  @Test
  void aRuleOfOursWithAnExtraSelectorIsStaleAndReplacedByTheExactWantedRule() throws Exception {
    DesiredState plan = planFor(examples());
    dp.reconcile(plan);
    Set<String> wanted = ipRuleLinesExact();
    String[][] edits = {
        {"ipproto", "tcp", "dport", "9"},
        {"ipproto", "udp", "sport", "1000-2000"},
        {"tos", "0x10"},
        {"uidrange", "100-200"},
        {"fwmark", "0x1"},
        {"iif", "lo"},
        {"oif", "lo"},
        {"suppress_prefixlength", "8"},
        {"suppress_ifgroup", "5"},
        {"realms", "7"},
        {"tun_id", "9"},
    };
    for (String[] extra : edits) {
      // someone's version of our rule: our priority, source, table and protocol, plus a selector
      ns.exec("ip", "rule", "del", "priority", "5000", "from", "10.128.0.5", "lookup", "100", "protocol", "201");
      List<String> add = new java.util.ArrayList<>(List.of("ip", "rule", "add", "priority", "5000", "from", "10.128.0.5"));
      add.addAll(List.of(extra));
      add.addAll(List.of("lookup", "100", "protocol", "201"));
      ns.exec(add.toArray(String[]::new));
      assertThat(ipRuleLinesExact()).as("set up with %s", List.of(extra)).isNotEqualTo(wanted);

      ApplyReport repair = dp.reconcile(plan);

      assertThat(repair.succeeded()).isTrue();
      assertThat(repair.applied()).extracting(Change::toString).as("with %s", List.of(extra))
          .contains("+ rule 5000: from 10.128.0.5 lookup 100 proto 201")
          .anyMatch(c -> c.startsWith("- rule 5000: from 10.128.0.5") && !c.equals("- rule 5000: from 10.128.0.5 lookup 100 proto 201"));
      assertThat(ipRuleLinesExact()).as("after repairing %s", List.of(extra)).isEqualTo(wanted);
      assertThat(dp.reconcile(plan).applied()).as("in sync after %s", List.of(extra)).isEmpty();
    }
  }

  /** Every rule of ours as the whole JSON object iproute2 prints for it: no selector can hide. */
  Set<String> ipRuleLinesExact() {
    Set<String> out = new TreeSet<>();
    for (String flag : List.of("-4", "-6")) {
      for (JsonNode r : ns.json("ip", "-j", flag, "rule", "show")) {
        if ("201".equals(r.path("protocol").asText())) {
          out.add(flag + " " + r);
        }
      }
    }
    return out;
  }

  @Test
  void aTamperedChainIsRepairedWithoutLosingElements() throws Exception {
    DesiredState plan = planFor(examples());
    dp.reconcile(plan);
    ns.exec("nft", "flush", "chain", "inet", "egress_service_agent", "postrouting");

    assertThat(dp.observe().nft().baseIntact()).isFalse();
    dp.reconcile(plan);

    assertThat(dp.observe().nft().baseIntact()).isTrue();
    assertThat(ns.exec("nft", "list", "chain", "inet", "egress_service_agent", "postrouting"))
        .contains("snat ip to ip saddr map @snat_v4");
    assertThat(nftElements()).isEqualTo(expectedElements(plan));
  }

  @Test
  void anUnknownNetworkFailsOnlyItsOwnService() throws Exception {
    Path dir = Files.createDirectories(tmp.resolve("objects"));
    for (Path f : Files.list(Path.of("examples")).toList()) {
      Files.writeString(dir.resolve(f.getFileName()),
          Files.readString(f).replace("network: \"101\"", "network: \"no-such-vrf\""));
    }
    DesiredState plan = planFor(ObjectFiles.load(List.of(dir), n -> {}));

    ApplyReport report = dp.reconcile(plan);

    assertThat(report.succeeded()).isTrue();
    assertThat(plan.services()).filteredOn(o -> o.service().name().equals("reports")).singleElement()
        .satisfies(o -> {
          assertThat(o.configured()).isFalse();
          assertThat(o.reason()).startsWith("network 'no-such-vrf' not found on this node");
        });
    assertThat(ipRules()).noneMatch(r -> r.contains("10.128.0.20")).anyMatch(r -> r.contains("10.128.0.5"));
    assertThat(nftElements()).contains("10.128.0.5 -> 5.5.5.5 default/web");
  }

  @Test
  void aNamedNetworkResolvesThroughRtTables() throws Exception {
    Path rt = tmp.resolve("rt_tables");
    Files.writeString(rt, "# test\n255 local\n254 main\n1001\tblue\n");
    Path dir = Files.createDirectories(tmp.resolve("rt_tables.d"));
    Files.writeString(dir.resolve("extra.conf"), "0x3ea green # 1002\n");

    var resolution = dp.resolveNetworks(List.of("blue", "green", "red", "100"), RtTables.read(List.of(rt, dir)));

    assertThat(resolution.tables()).containsEntry("blue", 1001L).containsEntry("green", 1002L).doesNotContainKey("100");
    assertThat(resolution.failures().get("red")).startsWith("network 'red' not found on this node");
  }

  @Test
  void aTableChangeAddsTheNewRuleBeforeDeletingTheOld() throws Exception {
    DesiredState plan100 = planFor(examples());
    dp.reconcile(plan100);
    Path dir = Files.createDirectories(tmp.resolve("objects"));
    for (Path f : Files.list(Path.of("examples")).toList()) {
      Files.writeString(dir.resolve(f.getFileName()), Files.readString(f).replace("network: \"100\"", "network: \"200\""));
    }
    DesiredState plan200 = planFor(ObjectFiles.load(List.of(dir), n -> {}));

    ChangeSet changes = Differ.diff(plan200, dp.observe());
    assertOrdered(changes);
    dp.apply(changes);
    assertThat(ipRules()).isEqualTo(expectedRules(plan200));
    Set<String> tables = new HashSet<>();
    ipRules().stream().filter(r -> r.contains("10.128.0.5")).forEach(tables::add);
    assertThat(tables).containsExactly("inet 5000 from 10.128.0.5 to - table 200");
  }

  @Test
  void switchingToMarkModeAndBackAddsTheNewFormBeforeRemovingTheOldAndEndsExactlyAtThePlan() throws Exception {
    ClusterObjects objects = examples();
    DesiredState source = planFor(objects);
    dp.reconcile(source);
    DesiredState mark = markPlanFor(objects);

    ChangeSet toMark = Differ.diff(mark, dp.observe());
    assertOrdered(toMark);
    assertThat(dp.apply(toMark).succeeded()).isTrue();

    assertThat(ns.exec("ip", "rule", "show")).contains("from all fwmark 0x1000000/0x3f000000 lookup 100 proto 201")
        .doesNotContain("from 10.128.0.5 lookup 100");
    assertThat(ns.exec("nft", "list", "map", "inet", "egress_service_agent", "mark_v4"))
        .contains("10.128.0.5 comment \"default/web\" : jump mark_t100");
    assertThat(dp.reconcile(mark).applied()).isEmpty();

    ChangeSet back = Differ.diff(source, dp.observe());
    assertOrdered(back);
    dp.apply(back);
    assertThat(ipRules()).isEqualTo(expectedRules(source));
    assertThat(ns.exec("nft", "list", "table", "inet", "egress_service_agent")).doesNotContain("mark_");
  }

  /** The node's plan in mark mode, with the marks the kernel already uses. */
  private DesiredState markPlanFor(ClusterObjects objects) {
    return KernelPlan.of(dp, objects, NODE, CONFIG.withRuleMode(io.egressservice.model.RuleMode.MARK,
        PlanConfig.DEFAULT_MARK_MASK)).desired();
  }


  /** Every rule addition comes before the first rule deletion: no source is ever without a rule. */
  private static void assertOrdered(ChangeSet changes) {
    List<String> order = changes.changes().stream().map(Change::toString).toList();
    int lastAdd = -1;
    int firstDelete = Integer.MAX_VALUE;
    for (int i = 0; i < order.size(); i++) {
      if (order.get(i).startsWith("+ rule")) {
        lastAdd = i;
      } else if (order.get(i).startsWith("- rule")) {
        firstDelete = Math.min(firstDelete, i);
      }
    }
    assertThat(lastAdd).isLessThan(firstDelete);
  }

  @Test
  void inMarkModeAnEndpointChangeIsOneMapElementNotARuleRewrite() throws Exception {
    dp.reconcile(markPlanFor(examples()));
    String rulesBefore = ns.exec("ip", "rule", "show");

    ApplyReport report = dp.reconcile(markPlanFor(ObjectFiles.load(List.of(copyExamplesWithout("10.128.0.9")), n -> {})));

    assertThat(report.applied()).extracting(Change::toString)
        .containsExactlyInAnyOrder("- snat 10.128.0.9 -> 5.5.5.5", "- mark 10.128.0.9 -> table 100");
    assertThat(ns.exec("ip", "rule", "show")).isEqualTo(rulesBefore);
  }
}

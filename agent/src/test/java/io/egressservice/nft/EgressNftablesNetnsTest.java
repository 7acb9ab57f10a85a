package io.egressservice.nft;

import io.egressservice.kernel.NftException;
import io.egressservice.kernel.linux.LinuxKernel;
import io.egressservice.kernel.linux.NftClient;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.NetnsThread;
import io.egressservice.nft.EgressNftables.NftChange;
import io.egressservice.nft.EgressNftables.NftState;
import io.egressservice.nft.EgressNftables.SnatElement;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The owned table in a throwaway namespace, with the {@code nft} command (run via {@code ip netns
 * exec}) as the independent oracle.
 */
class EgressNftablesNetnsTest {
  private static final String LIST = "inet egress_service_agent";
  private static final String OTHER_TABLE = """
      table inet other {
        set keep { type ipv4_addr; elements = { 192.0.2.1 } }
        chain out {
          type filter hook output priority 0; policy accept;
          ip daddr @keep counter
        }
      }
      """;

  @RegisterExtension
  final NftNamespace netns = new NftNamespace("nft");
  private EgressNftables nft;

  @BeforeEach
  void setUp() {
    nft = netns.closeLater(EgressNftables.open(NftClient.open(netns.thread()), LinuxKernel.generation(netns.thread())));
  }

  private JsonNode listJson() {
    return netns.ns().json("nft", "-j", "list", "table", "inet", "egress_service_agent").path("nftables");
  }

  private List<JsonNode> objects(String kind) {
    List<JsonNode> out = new ArrayList<>();
    listJson().forEach(n -> {
      if (n.has(kind)) {
        out.add(n.get(kind));
      }
    });
    return out;
  }

  private static SnatElement snat(String src, String dst, String comment) {
    return new SnatElement(IpPrefix.parse(src), IpPrefix.parse(dst), comment);
  }

  private static NftChange add(SnatElement... e) {
    return new NftChange(Set.of(e), Set.of(), Optional.empty());
  }

  private static NftChange delete(SnatElement... e) {
    return new NftChange(Set.of(), Set.of(e), Optional.empty());
  }

  /** nft's view of a map: key -> [value, comment]. */
  private Map<String, List<String>> mapElements(String map) {
    Map<String, List<String>> out = new HashMap<>();
    for (JsonNode m : objects("map")) {
      if (m.path("name").asText().equals(map)) {
        for (JsonNode e : m.path("elem")) {
          JsonNode key = e.get(0);
          String comment = key.has("elem") ? key.get("elem").path("comment").asText() : "";
          String k = key.has("elem") ? key.get("elem").path("val").asText() : key.asText();
          out.put(k, List.of(e.get(1).asText(), comment));
        }
      }
    }
    return out;
  }

  private List<Long> handles() {
    List<Long> h = new ArrayList<>();
    for (String kind : List.of("table", "map", "set", "chain", "rule")) {
      objects(kind).forEach(o -> h.add(o.path("handle").asLong()));
    }
    return h;
  }

  @Test
  void ensureBaseCreatesExactlyTheSpecifiedObjectsAndASecondApplyDoesNothing() {
    assertThat(nft.observe()).isEqualTo(new NftState(false, false, Set.of(), List.of()));

    nft.apply(NftChange.none(), true);

    assertThat(objects("table")).singleElement()
        .satisfies(t -> assertThat(t.path("family").asText()).isEqualTo("inet"));
    assertThat(objects("map")).extracting(m -> m.path("name").asText() + " " + m.path("type").asText()
            + " : " + m.path("map").asText())
        .containsExactlyInAnyOrder("snat_v4 ipv4_addr : ipv4_addr", "snat_v6 ipv6_addr : ipv6_addr");
    assertThat(objects("set")).extracting(s -> s.path("name").asText() + " " + s.path("type").asText()
            + " " + s.path("flags"))
        .containsExactlyInAnyOrder("in_cluster_v4 ipv4_addr [\"interval\"]", "in_cluster_v6 ipv6_addr [\"interval\"]");
    JsonNode chain = objects("chain").get(0);
    assertThat(objects("chain")).hasSize(1);
    assertThat(chain.path("name").asText()).isEqualTo("postrouting");
    assertThat(chain.path("type").asText()).isEqualTo("nat");
    assertThat(chain.path("hook").asText()).isEqualTo("postrouting");
    assertThat(chain.path("prio").asInt()).isEqualTo(90);
    assertThat(chain.path("policy").asText()).isEqualTo("accept");
    assertThat(objects("rule")).extracting(r -> r.path("expr"))
        .containsExactlyElementsOf(EgressTableLayout.expectedRuleExpressions());

    // The text form, as an operator sees it.
    String text = netns.ns().exec("nft", "list", "table", "inet", "egress_service_agent");
    assertThat(text).contains("type nat hook postrouting priority srcnat - 10; policy accept;");
    assertThat(text.lines().map(String::strip).filter(l -> l.contains("@")).toList()).containsExactly(
        "ip daddr @in_cluster_v4 return",
        "ip6 daddr @in_cluster_v6 return",
        "snat ip to ip saddr map @snat_v4",
        "snat ip6 to ip6 saddr map @snat_v6");

    NftState state = nft.observe();
    assertThat(state.tablePresent()).isTrue();
    assertThat(state.baseIntact()).isTrue();
    assertThat(state.snat()).isEmpty();
    assertThat(state.inCluster()).isEmpty();

    List<Long> before = handles();
    String rulesetBefore = netns.ns().exec("nft", "-a", "list", "ruleset");
    assertThat(nft.plan(NftChange.none(), true).path("nftables")).isEmpty();
    nft.apply(NftChange.none(), true);
    assertThat(handles()).isEqualTo(before);
    assertThat(netns.ns().exec("nft", "-a", "list", "ruleset")).isEqualTo(rulesetBefore);
  }

  @Test
  void elementsWithCommentsAreAddedDeletedAndChangedOneByOne() {
    SnatElement a = snat("10.244.0.5", "192.0.2.10", "default/web");
    SnatElement b = snat("10.244.0.6", "192.0.2.10", "default/web");
    SnatElement c = snat("fd00:10:244::5", "2001:db8::10", "prod/api");
    nft.apply(add(a, b, c), true);

    assertThat(mapElements("snat_v4")).containsOnly(
        Map.entry("10.244.0.5", List.of("192.0.2.10", "default/web")),
        Map.entry("10.244.0.6", List.of("192.0.2.10", "default/web")));
    assertThat(mapElements("snat_v6")).containsOnly(
        Map.entry("fd00:10:244::5", List.of("2001:db8::10", "prod/api")));
    assertThat(nft.observe().snat()).containsExactlyInAnyOrder(a, b, c);
    List<Long> baseHandles = handles();

    // Re-adding what is there is a no-op; deleting what is absent does not fail.
    assertThat(nft.plan(add(a), false).path("nftables")).isEmpty();
    nft.apply(delete(snat("10.244.9.9", "192.0.2.10", "default/web")), false);

    // Delete exactly one: the transaction is one element.
    JsonNode plan = nft.plan(delete(b), false);
    assertThat(plan.toString()).isEqualTo(
        "{\"nftables\":[{\"delete\":{\"element\":{\"family\":\"inet\",\"table\":\"egress_service_agent\","
            + "\"name\":\"snat_v4\",\"elem\":[\"10.244.0.6\"]}}}]}");
    nft.apply(delete(b), false);
    assertThat(mapElements("snat_v4")).containsOnlyKeys("10.244.0.5");
    assertThat(mapElements("snat_v6")).containsOnlyKeys("fd00:10:244::5");

    // A changed value (new LB IP) and a changed comment: delete+add of that key in one transaction.
    SnatElement a2 = snat("10.244.0.5", "192.0.2.99", "default/web");
    SnatElement c2 = snat("fd00:10:244::5", "2001:db8::10", "prod/api-v2");
    JsonNode changePlan = nft.plan(add(a2, c2), false);
    assertThat(changePlan.path("nftables")).extracting(n -> n.fieldNames().next() + " " + n.elements().next()
            .path("element").path("name").asText() + " " + n.elements().next().path("element").path("elem").size())
        .containsExactly("delete snat_v4 1", "delete snat_v6 1", "add snat_v4 1", "add snat_v6 1");
    nft.apply(add(a2, c2), false);
    assertThat(mapElements("snat_v4")).containsOnly(Map.entry("10.244.0.5", List.of("192.0.2.99", "default/web")));
    assertThat(mapElements("snat_v6")).containsOnly(Map.entry("fd00:10:244::5", List.of("2001:db8::10", "prod/api-v2")));
    assertThat(nft.observe().snat()).containsExactlyInAnyOrder(a2, c2);
    // Never a chain rewrite.
    assertThat(handles()).isEqualTo(baseHandles);
  }

  @Test
  void tamperedChainIsDetectedAndRepairedKeepingElements() {
    SnatElement a = snat("10.244.0.5", "192.0.2.10", "default/web");
    nft.apply(new NftChange(Set.of(a), Set.of(), Optional.of(List.of(IpPrefix.parse("10.0.0.0/8")))), true);
    assertThat(nft.observe().baseIntact()).isTrue();

    netns.ns().exec("nft", "flush", "chain", "inet", "egress_service_agent", "postrouting");
    NftState flushed = nft.observe();
    assertThat(flushed.baseIntact()).isFalse();
    assertThat(flushed.snat()).containsExactly(a);
    nft.apply(NftChange.none(), true);
    assertThat(nft.observe().baseIntact()).isTrue();
    assertThat(objects("rule")).extracting(r -> r.path("expr"))
        .containsExactlyElementsOf(EgressTableLayout.expectedRuleExpressions());

    netns.ns().exec("nft", "add", "rule", "inet", "egress_service_agent", "postrouting", "counter");
    assertThat(objects("rule")).hasSize(7);
    assertThat(nft.observe().baseIntact()).isFalse();
    nft.apply(NftChange.none(), false); // without ensureBase nothing is repaired
    assertThat(nft.observe().baseIntact()).isFalse();
    nft.apply(NftChange.none(), true);
    assertThat(objects("rule")).extracting(r -> r.path("expr"))
        .containsExactlyElementsOf(EgressTableLayout.expectedRuleExpressions());

    // A chain re-created at the wrong priority is replaced.
    netns.ns().execWithInput("""
        flush chain inet egress_service_agent postrouting
        delete chain inet egress_service_agent postrouting
        add chain inet egress_service_agent postrouting { type nat hook postrouting priority srcnat; }
        """, "nft", "-f", "-");
    assertThat(nft.observe().baseIntact()).isFalse();
    nft.apply(NftChange.none(), true);
    NftState repaired = nft.observe();
    assertThat(repaired.baseIntact()).isTrue();
    assertThat(objects("chain").get(0).path("prio").asInt()).isEqualTo(90);
    assertThat(repaired.snat()).containsExactly(a);
    assertThat(EgressNftables.sameCoverage(repaired.inCluster(), List.of(IpPrefix.parse("10.0.0.0/8")))).isTrue();

    // A set re-created without "flags interval" is replaced (its elements are lost and re-reported).
    netns.ns().execWithInput("""
        flush chain inet egress_service_agent postrouting
        delete set inet egress_service_agent in_cluster_v6
        add set inet egress_service_agent in_cluster_v6 { type ipv6_addr; }
        """, "nft", "-f", "-");
    assertThat(nft.observe().baseIntact()).isFalse();
    nft.apply(NftChange.none(), true);
    assertThat(nft.observe().baseIntact()).isTrue();
    assertThat(nft.observe().snat()).containsExactly(a);

    // A map re-created with another value type is replaced as well.
    netns.ns().execWithInput("""
        flush chain inet egress_service_agent postrouting
        delete map inet egress_service_agent snat_v6
        add map inet egress_service_agent snat_v6 { type ipv6_addr : ipv4_addr; }
        """, "nft", "-f", "-");
    assertThat(nft.observe().baseIntact()).isFalse();
    nft.apply(NftChange.none(), true);
    assertThat(nft.observe().baseIntact()).isTrue();
    assertThat(objects("rule")).extracting(r -> r.path("expr"))
        .containsExactlyElementsOf(EgressTableLayout.expectedRuleExpressions());
  }

  @Test
  void anotherTableSurvivesEveryApplyAndDeleteTable() {
    netns.ns().execWithInput(OTHER_TABLE, "nft", "-f", "-");
    String other = netns.ns().exec("nft", "-a", "list", "table", "inet", "other");
    nft.apply(add(snat("10.244.0.5", "192.0.2.10", "default/web")), true);
    nft.apply(new NftChange(Set.of(), Set.of(snat("10.244.0.5", "192.0.2.10", "default/web")),
        Optional.of(List.of(IpPrefix.parse("10.0.0.0/8")))), true);
    netns.ns().exec("nft", "flush", "chain", "inet", "egress_service_agent", "postrouting");
    nft.apply(NftChange.none(), true);
    assertThat(netns.ns().exec("nft", "-a", "list", "table", "inet", "other")).isEqualTo(other);
    nft.deleteTable();
    assertThat(netns.ns().exec("nft", "-a", "list", "table", "inet", "other")).isEqualTo(other);
    assertThat(netns.ns().exec("nft", "list", "tables").strip()).isEqualTo("table inet other");
  }

  @Test
  void inClusterReplacementMergesOverlapsAndAdjacency() {
    List<IpPrefix> desired = List.of(
        IpPrefix.parse("10.244.0.0/24"), IpPrefix.parse("10.244.1.0/24"), // adjacent
        IpPrefix.parse("10.244.0.128/25"), // inside
        IpPrefix.parse("10.96.0.0/12"),
        IpPrefix.parse("192.168.1.5"),
        IpPrefix.parse("192.168.1.6"),
        IpPrefix.parse("fd00:10:244::/64"), IpPrefix.parse("fd00:10:244:1::/64"),
        IpPrefix.parse("fd00:10:96::/112"));
    nft.apply(new NftChange(Set.of(), Set.of(), Optional.of(desired)), true);

    String text = netns.ns().exec("nft", "list", "set", "inet", "egress_service_agent", "in_cluster_v4");
    assertThat(text).contains("10.96.0.0/12", "10.244.0.0/23", "192.168.1.5-192.168.1.6");
    String text6 = netns.ns().exec("nft", "list", "set", "inet", "egress_service_agent", "in_cluster_v6");
    assertThat(text6).contains("fd00:10:244::/63", "fd00:10:96::/112");
    NftState state = nft.observe();
    assertThat(state.inCluster()).hasSize(5);
    assertThat(EgressNftables.sameCoverage(state.inCluster(), desired)).isTrue();
    assertThat(EgressNftables.sameCoverage(state.inCluster(), desired.subList(0, 3))).isFalse();

    // Replace with something else: the old elements are gone, in the same transaction.
    List<IpPrefix> next = List.of(IpPrefix.parse("10.0.0.0/8"));
    JsonNode plan = nft.plan(new NftChange(Set.of(), Set.of(), Optional.of(next)), true);
    assertThat(plan.path("nftables")).extracting(n -> n.fieldNames().next())
        .containsExactly("flush", "add", "flush");
    nft.apply(new NftChange(Set.of(), Set.of(), Optional.of(next)), true);
    assertThat(nft.observe().inCluster()).containsExactly(EgressNftables.IpRange.of(IpPrefix.parse("10.0.0.0/8")));
    assertThat(netns.ns().exec("nft", "list", "set", "inet", "egress_service_agent", "in_cluster_v6")).doesNotContain("fd00");

    nft.apply(new NftChange(Set.of(), Set.of(), Optional.of(List.of())), false);
    assertThat(nft.observe().inCluster()).isEmpty();
  }

  @Test
  void missingTableDeleteTwiceAndErrors() {
    assertThat(nft.observe().tablePresent()).isFalse();
    nft.deleteTable();
    nft.apply(NftChange.none(), true);
    assertThat(nft.observe().tablePresent()).isTrue();
    nft.deleteTable();
    nft.deleteTable();
    assertThat(netns.ns().exec("nft", "list", "ruleset").strip()).isEmpty();
    assertThat(nft.observe()).isEqualTo(new NftState(false, false, Set.of(), List.of()));

    try (NftClient client = NftClient.open(netns.thread())) {
      ObjectNode bad = NftClient.JSON.createObjectNode();
      bad.putArray("nftables").addObject().putObject("add").putObject("chain")
          .put("family", "inet").put("table", "no_such_table").put("name", "c");
      assertThatThrownBy(() -> client.run(bad))
          .isInstanceOf(NftException.class)
          .hasMessageContaining("No such file or directory")
          .hasMessageContaining("1 command: add chain")
          .hasMessageContaining(netns.ns().name());
      ObjectNode malformed = NftClient.JSON.createObjectNode();
      malformed.putArray("nftables").addObject().putObject("add").putObject("frobnicate");
      assertThatThrownBy(() -> client.run(malformed))
          .isInstanceOf(NftException.class)
          .satisfies(e -> assertThat(((NftException) e).nftError()).contains("Error:"));
    }
    // Adding to a table that is absent without ensureBase fails with nft's message, nothing applied.
    assertThatThrownBy(() -> nft.apply(add(snat("10.244.0.5", "192.0.2.10", "default/web")), false))
        .isInstanceOf(NftException.class)
        .hasMessageContaining("No such file or directory");
    assertThat(netns.ns().exec("nft", "list", "ruleset").strip()).isEmpty();
  }

  @Test
  void namespaceThatDoesNotExistIsAClearError() {
    assertThatThrownBy(() -> NetnsThread.enter(Optional.of("esa-nft-does-not-exist")))
        .isInstanceOf(NetlinkException.NoSuchNamespace.class)
        .hasMessageContaining("no such network namespace 'esa-nft-does-not-exist'");
  }

  @Test
  void tenThousandElementsInOneTransaction() {
    nft.apply(NftChange.none(), true);
    Set<SnatElement> many = new HashSet<>();
    for (int i = 0; i < 10_000; i++) {
      many.add(snat("10.%d.%d.%d".formatted(100 + i / 65536, (i / 256) % 256, i % 256), "192.0.2.10",
          "ns-" + (i % 50) + "/svc-" + (i % 7)));
    }
    long t0 = System.nanoTime();
    nft.apply(new NftChange(many, Set.of(), Optional.empty()), false);
    long t1 = System.nanoTime();
    NftState state = nft.observe();
    long t2 = System.nanoTime();
    SnatElement one = many.iterator().next();
    nft.apply(delete(one), false);
    long t3 = System.nanoTime();
    System.out.printf("SCALE: add 10000 elements in one transaction: %d ms; observe(): %d ms; delete one: %d ms%n",
        (t1 - t0) / 1_000_000, (t2 - t1) / 1_000_000, (t3 - t2) / 1_000_000);
    assertThat(state.snat()).hasSize(10_000).isEqualTo(many);
    assertThat(nft.observe().snat()).hasSize(9_999).doesNotContain(one);
    assertThat(netns.ns().json("nft", "-j", "list", "map", "inet", "egress_service_agent", "snat_v4")
        .path("nftables").get(1).path("map").path("elem").size()).isEqualTo(9_999);
    assertThat((t1 - t0) / 1_000_000).isLessThan(60_000);
    assertThat((t2 - t1) / 1_000_000).isLessThan(60_000);
  }
}

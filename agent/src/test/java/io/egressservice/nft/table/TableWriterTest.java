package io.egressservice.nft.table;

import static io.egressservice.nft.table.Expr.drop;
import static io.egressservice.nft.table.Expr.in;
import static io.egressservice.nft.table.Expr.payload;
import static io.egressservice.nft.table.Expr.rule;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.nft.table.NftTable.Chain;
import io.egressservice.nft.table.NftTable.Element;
import io.egressservice.nft.table.NftTable.NftSet;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The transactions the generic writer makes of a table as data, without a kernel. */
class TableWriterTest {
  private static NftTable table(List<String> blocked, List<String> inCluster) {
    return NftTable.of("inet", "t").withCounter("c", "blocked")
        .withSet(NftSet.of("blocked_v4", "ipv4_addr").withElements(blocked.stream().map(Element::of).toList()))
        .withSet(NftSet.of("in_cluster_v4", "ipv4_addr").withFlags("interval")
            .withElements(inCluster.stream().map(Element::of).toList()))
        .withChain(Chain.base("forward", "filter", "forward", -10)
            .withRule(rule(in(payload("ip", "saddr"), "blocked_v4"), Expr.counter("c"), drop())));
  }

  @Test
  void aTableNotKnownIsReplacedWholeInOneTransactionThatNeverLeavesItAbsent() {
    JsonNode doc = TableWriter.transaction(table(List.of("10.0.0.1"), List.of()), Optional.empty(), Set.of());

    assertThat(verbs(doc)).containsExactly("add table", "delete table", "add table", "add counter", "add set",
        "add element", "add set", "add chain", "add rule");
    assertThat(doc.at("/nftables/5/add/element/elem/0").asText()).isEqualTo("10.0.0.1");
    assertThat(doc.at("/nftables/7/add/chain/prio").asInt()).isEqualTo(-10);
    assertThat(doc.at("/nftables/8/add/rule/expr/1/counter").asText()).isEqualTo("c");
  }

  @Test
  void onlyTheElementsThatChangedAreWrittenWhenTheShapeStays() {
    NftTable before = table(List.of("10.0.0.1", "10.0.0.2"), List.of("10.128.0.0"));
    NftTable after = table(List.of("10.0.0.2", "10.0.0.3"), List.of("10.128.0.0"));

    JsonNode doc = TableWriter.transaction(after, Optional.of(before), Set.of("blocked_v4"));

    assertThat(verbs(doc)).containsExactly("delete element", "add element");
    assertThat(doc.at("/nftables/0/delete/element/elem").toString()).isEqualTo("[\"10.0.0.1\"]");
    assertThat(doc.at("/nftables/1/add/element/elem").toString()).isEqualTo("[\"10.0.0.3\"]");
    assertThat(TableWriter.isEmpty(TableWriter.transaction(after, Optional.of(after), Set.of("blocked_v4"))))
        .isTrue();
  }

  @Test
  void aChangeOutsideTheSetsThatChangeByElementRewritesTheTable() {
    NftTable before = table(List.of("10.0.0.1"), List.of("10.128.0.0"));
    NftTable after = table(List.of("10.0.0.1"), List.of("10.129.0.0"));

    assertThat(verbs(TableWriter.transaction(after, Optional.of(before), Set.of("blocked_v4")))).startsWith(
        "add table", "delete table", "add table");
  }

  @Test
  void elementTimeoutsAreWholeSecondsRoundedUpAsNftablesOneZeroSixReadsThem() {
    NftTable t = NftTable.of("inet", "t").withSet(NftSet.of("s", "ipv4_addr").withFlags("timeout").withElements(
        List.of(Element.of("10.0.0.1").withTimeout(Duration.ofSeconds(10)),
            Element.of("10.0.0.2").withTimeout(Duration.ofMillis(1500)),
            Element.of("10.0.0.3").withTimeout(Duration.ZERO))));

    JsonNode elems = TableWriter.replace(t).at("/nftables/4/add/element/elem");

    assertThat(elems.findValues("timeout").stream().map(JsonNode::asLong)).containsExactly(10L, 2L, 1L);
  }

  @Test
  void aMapsElementsCarryTheirValueAndComment() {
    NftTable t = NftTable.of("inet", "t").withSet(new NftSet("snat_v4", List.of("ipv4_addr"),
        Optional.of("ipv4_addr"), Set.of(), List.of(Element.of("10.0.0.1").withComment("shop/web")
            .withValue(Expr.text("5.5.5.5")))));

    JsonNode doc = TableWriter.replace(t);

    assertThat(verbs(doc)).containsExactly("add table", "delete table", "add table", "add map", "add element");
    assertThat(doc.at("/nftables/3/add/map/map").asText()).isEqualTo("ipv4_addr");
    assertThat(doc.at("/nftables/4/add/element/elem/0").toString())
        .isEqualTo("[{\"elem\":{\"val\":\"10.0.0.1\",\"comment\":\"shop/web\"}},\"5.5.5.5\"]");
  }

  @Test
  void removingATableThatMayBeAbsentAddsItFirst() {
    assertThat(verbs(TableWriter.remove("inet", "t"))).containsExactly("add table", "delete table");
  }

  private static List<String> verbs(JsonNode doc) {
    List<String> out = new ArrayList<>();
    doc.get("nftables").forEach(cmd -> {
      String verb = cmd.fieldNames().next();
      out.add(verb + " " + cmd.get(verb).fieldNames().next());
    });
    return out;
  }
}

package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/** Named counters read over nfnetlink: the wire format without root, then against the kernel with nft as the oracle. */
class NftCountersTest {

  @Test
  void counterDumpIsGetobjFilteredByTableAndType() {
    assumeTrue(ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN, "test vectors are little-endian");
    NetlinkMessageWriter w = new NetlinkMessageWriter(ByteBuffer.allocate(64));
    NftCounters.encodeCounterDump(w, 7, 1, "t");
    assertThat(Hex.of(w.toByteArray())).isEqualTo(Hex.of(Hex.bytes("""
        24 00 00 00 | 13 0a | 01 03 | 07 00 00 00 | 00 00 00 00   # len 36, NFTABLES << 8 | NFT_MSG_GETOBJ 19, REQUEST|DUMP, seq
        01 00 00 00                                               # nfgenmsg: NFPROTO_INET, NFNETLINK_V0, res_id 0
        06 00 01 00 | 74 00 00 00                                 # NFTA_OBJ_TABLE "t"
        08 00 03 00 | 00 00 00 01                                 # NFTA_OBJ_TYPE NFT_OBJECT_COUNTER, network order
        """)));
  }

  @Test
  void aCounterIsDecodedWithItsCommentAndOtherTablesObjectsAreSkipped() {
    byte[] counter = Hex.bytes("""
        01 00 00 00                                               # nfgenmsg
        06 00 01 00 | 74 00 00 00                                 # NFTA_OBJ_TABLE "t"
        07 00 02 00 | 63 31 00 00                                 # NFTA_OBJ_NAME "c1"
        08 00 03 00 | 00 00 00 01                                 # NFTA_OBJ_TYPE counter
        1c 00 04 80                                               # NFTA_OBJ_DATA, nested
        0c 00 01 00 | 00 00 00 00 00 00 01 00                     #   NFTA_COUNTER_BYTES 256
        0c 00 02 00 | 00 00 00 00 00 00 00 03                     #   NFTA_COUNTER_PACKETS 3
        09 00 08 00 | 00 03 68 69 00 00 00 00                     # NFTA_OBJ_USERDATA: comment (0), 3 bytes "hi\\0"
        """);
    assertThat(NftCounters.decodeCounter(ByteBuffer.wrap(counter).order(ByteOrder.nativeOrder()), "t"))
        .contains(new NftCounters.Counter("c1", 3, 256, Optional.of("hi")));
    assertThat(NftCounters.decodeCounter(ByteBuffer.wrap(counter).order(ByteOrder.nativeOrder()), "other"))
        .as("an old kernel that does not filter the dump by table").isEmpty();
  }

  @Nested
  class Kernel {
    @Test
    void readsWhatNftListsForTheTableAndNothingOfOtherTables() {
      Privileges.assumeNetAdmin();
      try (Netns ns = Netns.create("ctr");
          NetnsThread thread = NetnsThread.enter(Optional.of(ns.name()));
          NftCounters counters = NftCounters.open(thread)) {
        assertThat(counters.of("inet", "t")).as("no such table").isEmpty();
        ns.execWithInput("""
            table inet t {
              counter quiet { comment "never counts" }
              counter plain { }
              counter busy { packets 12 bytes 3400 comment "steering port: not from a Node" }
              set s { type ipv4_addr; }
            }
            table inet other {
              counter foreign { }
            }
            table ip t {
              counter samename { }
            }
            """, "nft", "-f", "-");
        Map<String, List<Object>> expected = new HashMap<>();
        for (JsonNode item : ns.json("nft", "-j", "list", "counters", "table", "inet", "t").path("nftables")) {
          JsonNode c = item.path("counter");
          if (c.has("name")) {
            expected.put(c.path("name").asText(), List.of(c.path("packets").asLong(), c.path("bytes").asLong(),
                c.has("comment") ? Optional.of(c.path("comment").asText()) : Optional.empty()));
          }
        }
        assertThat(expected).hasSize(3);
        Map<String, List<Object>> read = counters.of("inet", "t").orElseThrow().stream().collect(
            Collectors.toMap(NftCounters.Counter::name, c -> List.of(c.packets(), c.bytes(), c.comment())));
        assertThat(read).isEqualTo(expected);
        assertThat(counters.of("inet", "empty")).isEmpty();
        ns.exec("nft", "add", "table", "inet", "empty");
        assertThat(counters.of("inet", "empty")).contains(List.of());
      }
    }

    @Test
    void aTableWithManySetElementsIsReadWithoutThem() {
      Privileges.assumeNetAdmin();
      try (Netns ns = Netns.create("ctr");
          NetnsThread thread = NetnsThread.enter(Optional.of(ns.name()));
          NftCounters counters = NftCounters.open(thread)) {
        String elements = IntStream.range(0, 20_000)
            .mapToObj(i -> "10." + (i >> 16) + "." + ((i >> 8) & 255) + "." + (i & 255)
                + " comment \"shop/service-" + i / 10 + "\"")
            .collect(Collectors.joining(", "));
        ns.execWithInput("table inet t {\n counter c { }\n set s { type ipv4_addr; }\n}\nadd element inet t s { "
            + elements + " }\n", "nft", "-f", "-");
        long start = System.nanoTime();
        assertThat(counters.of("inet", "t").orElseThrow()).extracting(NftCounters.Counter::name).containsExactly("c");
        assertThat((System.nanoTime() - start) / 1_000_000).as("ms for one table's counters beside 20,000 elements")
            .isLessThan(200);
      }
    }

    @Test
    void anUnknownFamilyIsRefusedBeforeAnythingIsSent() {
      Privileges.assumeNetAdmin();
      try (Netns ns = Netns.create("ctr");
          NetnsThread thread = NetnsThread.enter(Optional.of(ns.name()));
          NftCounters counters = NftCounters.open(thread)) {
        assertThatThrownBy(() -> counters.of("inet6", "t")).isInstanceOf(IllegalArgumentException.class)
            .hasMessageContaining("inet6");
      }
    }
  }
}

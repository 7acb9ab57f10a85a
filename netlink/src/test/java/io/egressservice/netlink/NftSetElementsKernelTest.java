package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpPrefix;
import io.egressservice.testing.NetnsFixture;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.List;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * Set and map elements read over NFT_MSG_GETSETELEM in a namespace of the test's own, with nft as the oracle: each
 * element turned into the text nft's JSON listing gives for it.
 */
class NftSetElementsKernelTest {
  @RegisterExtension
  final NetnsFixture fixture = new NetnsFixture("setelem");

  private static final String TABLES = """
      table inet t {
        chain c1 { }
        chain c2 { }
        map vm { type ipv4_addr : verdict; elements = { 10.0.0.1 comment "shop/a" : jump c1, 10.0.0.2 : goto c2,
          10.0.0.3 : accept, 10.0.0.4 comment "two words" : drop, 10.0.0.5 : return } }
        map ca { type ipv4_addr : verdict; elements = { 10.0.0.1 : accept, * : jump c1 } }
        set cs { type ipv4_addr; flags interval; elements = { 10.0.0.0/8 comment "ten", * } }
        map am { type ipv4_addr : ipv4_addr; elements = { 10.0.0.1 comment "shop/a" : 192.0.2.1, 10.0.0.2 : 192.0.2.2 } }
        map am6 { type ipv6_addr : ipv6_addr; elements = { 2001:db8::1 comment "v6" : fd00::5, fe80::1 : ::1 } }
        set iv { type ipv4_addr; flags interval; elements = { 10.0.0.0/8 comment "a", 172.16.0.5,
          192.168.1.1-192.168.1.9 comment "range", 192.168.1.10-192.168.1.20, 255.255.255.0/24 comment "top" } }
        set iv6 { type ipv6_addr; flags interval; elements = { 2001:db8::/32, 2001:db9::1 comment "one",
          2001:dba::5-2001:dba::9, ffff::/16 } }
        set whole { type ipv4_addr; flags interval; elements = { 0.0.0.0/0 comment "everything" } }
        set low { type ipv4_addr; flags interval; elements = { 0.0.0.0/8 comment "zero", 1.0.0.1 } }
        map im { type ipv4_addr : verdict; flags interval; elements = { 10.0.0.0/8 : jump c1,
          192.0.2.0/24 comment "doc" : accept } }
        set cc { type ipv4_addr . inet_service; flags interval; elements = { 10.0.0.0/24 . 80-90 comment "cc",
          1.2.3.4 . 22 } }
        set n { type ifname; elements = { "eth0", "lo", "egress-vx" } }
        set empty { type ipv4_addr; }
      }
      table inet other {
        set iv { type ipv4_addr; flags interval; elements = { 9.9.9.9 } }
      }
      table ip t {
        set iv { type ipv4_addr; flags interval; elements = { 8.8.8.8 } }
      }
      """;

  private NftSetElements reader() {
    return fixture.closeLater(NftSetElements.open(fixture.thread()));
  }

  private void load(String script) {
    fixture.ns().execWithInput(script, "nft", "-f", "-");
  }

  @Test
  void verdictAndDataMapsReadAsNftListsThem() {
    load(TABLES);
    NftSetElements reader = reader();
    for (String map : List.of("vm", "ca", "am", "am6")) {
      List<String> read = reader.collect("inet", "t", map, Collectors.mapping(
          e -> (e.catchAll() ? "*" : text(e.key())) + " : " + e.verdict().map(SetElement.Verdict::toString).orElseGet(
              () -> text(e.data().orElseThrow())) + e.comment().map(c -> " comment " + c).orElse(""),
          Collectors.toList())).orElseThrow();
      assertThat(read).as(map).containsExactlyInAnyOrderElementsOf(nftMap(map)).isNotEmpty();
    }
  }

  @Test
  void intervalSetsRebuildIntoTheRangesNftLists() {
    load(TABLES);
    NftSetElements reader = reader();
    for (String set : List.of("iv", "iv6", "whole", "low", "im")) {
      List<String> read = reader.collect("inet", "t", set, NftIntervals.collector()).orElseThrow().stream()
          .map(r -> r.prefix().map(IpPrefix::toString).orElseGet(() -> text(r.first()) + "-" + text(r.last()))
              + r.start().verdict().map(v -> " : " + v).orElse("")
              + r.start().comment().map(c -> " comment " + c).orElse(""))
          .toList();
      assertThat(read).as(set).containsExactlyInAnyOrderElementsOf(nftIntervals(set)).isNotEmpty();
    }
    assertThat(reader.collect("inet", "t", "iv", Collectors.toList()).orElseThrow())
        .as("what the kernel holds: a start and an end one past it per range, none after the top range")
        .filteredOn(SetElement::intervalEnd).extracting(e -> text(e.key()))
        .containsExactlyInAnyOrder("0.0.0.0", "11.0.0.0", "172.16.0.6", "192.168.1.10", "192.168.1.21");
  }

  @Test
  void theCatchAllElementHasNoKeyAndIsNoRange() {
    load(TABLES);
    NftSetElements reader = reader();
    assertThat(reader.collect("inet", "t", "cs", Collectors.toList()).orElseThrow()).filteredOn(SetElement::catchAll)
        .singleElement().satisfies(e -> assertThat(e.key()).isEmpty()).hasToString("SetElement[* flags 2]");
    assertThat(reader.collect("inet", "t", "cs", NftIntervals.collector()).orElseThrow())
        .extracting(r -> r.prefix().orElseThrow() + " " + r.start().comment().orElseThrow())
        .containsExactly("10.0.0.0/8 ten");
  }

  @Test
  void concatenatedRangesCarryTheirInclusiveEnd() {
    load(TABLES);
    List<NftIntervals.Range> ranges = reader().collect("inet", "t", "cc", NftIntervals.collector()).orElseThrow();
    HexFormat hex = HexFormat.of();
    // ipv4_addr . inet_service: 4 address bytes, then the port's 2 bytes padded to 4 (nft --debug=netlink).
    assertThat(ranges).extracting(r -> hex.formatHex(r.first()) + "-" + hex.formatHex(r.last())
            + r.start().comment().map(c -> " " + c).orElse(""))
        .containsExactly("01020304" + "00160000" + "-" + "01020304" + "00160000",
            "0a000000" + "00500000" + "-" + "0a0000ff" + "005a0000" + " cc");
  }

  @Test
  void ifnameKeysAreNulPaddedNames() {
    load(TABLES);
    List<SetElement> read = reader().collect("inet", "t", "n", Collectors.toList()).orElseThrow();
    assertThat(read).extracting(SetElement::keyString).containsExactlyInAnyOrder("eth0", "lo", "egress-vx");
    assertThat(read).allSatisfy(e -> assertThat(e.key()).hasSize(16));
    List<String> nft = new ArrayList<>();
    fixture.ns().json("nft", "-j", "list", "set", "inet", "t", "n").findValue("elem").forEach(e -> nft.add(e.asText()));
    assertThat(read).extracting(SetElement::keyString).containsExactlyInAnyOrderElementsOf(nft);
  }

  @Test
  void anAbsentTableOrSetIsEmptyAndOtherTablesAreNotRead() {
    NftSetElements reader = reader();
    assertThat(reader.collect("inet", "t", "iv", Collectors.toList())).as("no table").isEmpty();
    load(TABLES);
    assertThat(reader.collect("inet", "t", "nosuchset", Collectors.toList())).as("no set").isEmpty();
    assertThat(reader.collect("inet", "nosuchtable", "iv", Collectors.toList())).as("no table").isEmpty();
    assertThat(reader.collect("inet", "t", "empty", Collectors.toList())).as("no elements").contains(List.of());
    assertThat(reader.collect("inet", "t", "vm", Collectors.counting())).as("a map by name, like a set").contains(5L);
    assertThat(reader.collect("inet", "other", "iv", NftIntervals.collector()).orElseThrow())
        .extracting(r -> r.prefix().orElseThrow().toString()).containsExactly("9.9.9.9");
    assertThat(reader.collect("ip", "t", "iv", NftIntervals.collector()).orElseThrow())
        .extracting(r -> r.prefix().orElseThrow().toString()).containsExactly("8.8.8.8");
    assertThat(reader.collect("inet", "t", "iv", Collectors.counting()).orElseThrow())
        .as("the starts and ends of inet t iv only").isEqualTo(2 * 5 - 1 + 1);
  }

  @Test
  void fiftyThousandMapElementsStreamThroughOneReceiveBufferInUnderASecondOfCpu() {
    int n = 50_000;
    String elements = IntStream.range(0, n)
        .mapToObj(i -> "10." + (i >> 16) + "." + ((i >> 8) & 255) + "." + (i & 255)
            + " comment \"shop/service-" + i / 10 + "\" : jump c" + i % 2)
        .collect(Collectors.joining(", "));
    load("table inet t {\n chain c0 { }\n chain c1 { }\n map m { type ipv4_addr : verdict; }\n}\n"
        + "add element inet t m { " + elements + " }\n");
    NftSocket socket = fixture.closeLater(NftSocket.open(fixture.thread()));
    NftSetElements reader = new NftSetElements(fixture.thread(), socket);
    // CPU time of the namespace's thread, which decodes and in whose recvmsg the kernel runs the dump: the
    // machine's load (other builds on two shared cores) stretches wall time, not this.
    java.lang.management.ThreadMXBean cpu = java.lang.management.ManagementFactory.getThreadMXBean();
    long threadId = fixture.thread().call(() -> Thread.currentThread().getId());
    long[] datagramsAtFirst = {-1};
    long best = Long.MAX_VALUE;
    long bestWall = Long.MAX_VALUE;
    long count = 0;
    for (int round = 0; round < 3; round++) { // the first rounds also load and compile the decoder
      datagramsAtFirst[0] = -1;
      long before = socket.datagrams();
      long start = System.nanoTime();
      long cpuStart = cpu.getThreadCpuTime(threadId);
      count = reader.collect("inet", "t", "m", Collectors.summingLong(e -> {
        if (datagramsAtFirst[0] < 0) {
          datagramsAtFirst[0] = socket.datagrams() - before;
        }
        return e.verdict().orElseThrow().chain().orElseThrow().startsWith("c") && e.comment().isPresent() ? 1 : 0;
      })).orElseThrow();
      best = Math.min(best, cpu.getThreadCpuTime(threadId) - cpuStart);
      bestWall = Math.min(bestWall, System.nanoTime() - start);
      long datagrams = socket.datagrams() - before;
      assertThat(datagramsAtFirst[0]).as("the first element is handed over from the first datagram").isEqualTo(1);
      assertThat(datagrams).as("the dump arrives in many datagrams of at most 64 KiB, each reusing the buffer")
          .isGreaterThan(n * 40L / NftSocket.RECEIVE_BYTES);
    }
    assertThat(count).isEqualTo(n);
    System.out.printf("NftSetElements: %d elements in %d ms of CPU, %d ms wall%n", n, best / 1_000_000,
        bestWall / 1_000_000);
    assertThat(best / 1_000_000).as("ms of CPU for %d elements", n).isLessThan(1000);
  }

  @Test
  void aChangeCommittedDuringTheDumpRestartsItAndTheResultIsTheNewRuleset() {
    int n = 5_000; // a dump of a dozen datagrams: the change lands between two of them
    String elements = IntStream.range(0, n).mapToObj(i -> "10.0." + (i >> 8) + "." + (i & 255) + " : jump c0")
        .collect(Collectors.joining(", "));
    load("table inet t {\n chain c0 { }\n map m { type ipv4_addr : verdict; }\n}\nadd element inet t m { "
        + elements + " }\n");
    int[] attempts = {0};
    boolean[] changed = {false};
    long read = reader().collect("inet", "t", "m", java.util.stream.Collector.<SetElement, long[], Long>of(
        () -> {
          attempts[0]++;
          return new long[1];
        },
        (count, e) -> {
          if (!changed[0]) { // at the first element, from the dump's first datagram: commit a change meanwhile
            changed[0] = true;
            fixture.ns().exec("nft", "add", "element", "inet", "t", "m", "{ 10.200.0.1 : jump c0 }");
          }
          count[0]++;
        },
        (a, b) -> {
          a[0] += b[0];
          return a;
        },
        count -> count[0])).orElseThrow();
    assertThat(attempts[0]).as("the kernel marked the first dump NLM_F_DUMP_INTR: it was run again").isEqualTo(2);
    assertThat(read).as("only the complete second dump was collected").isEqualTo(n + 1);
  }

  /** A key or value as nft prints it: an address for 4 or 16 bytes. */
  private static String text(byte[] b) {
    return IpPrefix.host(b).toString();
  }

  /** Each element of map {@code map} of inet t as "key : value [comment c]" from nft's JSON listing. */
  private List<String> nftMap(String map) {
    List<String> out = new ArrayList<>();
    for (JsonNode pair : fixture.ns().json("nft", "-j", "list", "map", "inet", "t", map).findValue("elem")) {
      JsonNode key = pair.get(0);
      JsonNode value = pair.get(1);
      String comment = key.path("elem").has("comment") ? " comment " + key.path("elem").path("comment").asText() : "";
      String k = key.has("elem") ? key.path("elem").path("val").asText() : key.asText();
      out.add(k + " : " + verdictOrValue(value) + comment);
    }
    return out;
  }

  private static String verdictOrValue(JsonNode value) {
    if (!value.isObject()) {
      return value.asText();
    }
    String verdict = value.fieldNames().next();
    JsonNode target = value.path(verdict).path("target");
    return target.isMissingNode() ? verdict : verdict + " " + target.asText();
  }

  /** Each element of interval set (or map) {@code set} of inet t as nft lists it: prefix, address or range. */
  private List<String> nftIntervals(String set) {
    JsonNode listing = fixture.ns().tryExec("nft", "-j", "list", "set", "inet", "t", set).exitCode() == 0
        ? fixture.ns().json("nft", "-j", "list", "set", "inet", "t", set)
        : fixture.ns().json("nft", "-j", "list", "map", "inet", "t", set);
    List<String> out = new ArrayList<>();
    for (JsonNode item : listing.findValue("elem")) {
      JsonNode key = item.isArray() ? item.get(0) : item;
      String value = item.isArray() ? " : " + verdictOrValue(item.get(1)) : "";
      String comment = key.path("elem").has("comment") ? " comment " + key.path("elem").path("comment").asText() : "";
      JsonNode val = key.has("elem") ? key.path("elem").path("val") : key;
      String range;
      if (val.has("prefix")) {
        range = IpPrefix.parse(val.path("prefix").path("addr").asText() + "/" + val.path("prefix").path("len").asInt())
            .toString();
      } else if (val.has("range")) {
        range = IpPrefix.parseHost(val.path("range").get(0).asText()) + "-"
            + IpPrefix.parseHost(val.path("range").get(1).asText());
      } else {
        range = IpPrefix.parseHost(val.asText()).toString();
      }
      out.add(range + value + comment);
    }
    return out;
  }
}

package io.egressservice.plan;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import java.math.BigInteger;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.RepeatedTest;
import org.junit.jupiter.api.RepetitionInfo;
import org.junit.jupiter.api.Test;

class CidrsTest {

  private static List<IpPrefix> prefixes(String... texts) {
    return Stream.of(texts).map(IpPrefix::parse).toList();
  }

  private static List<String> aggregate(String... texts) {
    return Cidrs.aggregate(prefixes(texts)).stream().map(IpPrefix::toString).toList();
  }

  @Test
  void emptyInputGivesEmptyOutput() {
    assertThat(Cidrs.aggregate(List.of())).isEmpty();
  }

  @Test
  void singlePrefixIsKept() {
    assertThat(aggregate("10.0.0.0/8")).containsExactly("10.0.0.0/8");
  }

  @Test
  void duplicatesCollapse() {
    assertThat(aggregate("10.0.0.0/8", "10.0.0.0/8", "10.1.2.3/8")).containsExactly("10.0.0.0/8");
  }

  @Test
  void containedPrefixesAreDropped() {
    assertThat(aggregate("10.1.0.0/16", "10.0.0.0/8", "10.2.3.4", "10.255.255.0/24"))
        .containsExactly("10.0.0.0/8");
    assertThat(aggregate("fd00::/8", "fd01::1", "fdff::/16")).containsExactly("fd00::/8");
  }

  @Test
  void siblingHalvesMerge() {
    assertThat(aggregate("10.0.0.0/25", "10.0.0.128/25")).containsExactly("10.0.0.0/24");
    assertThat(aggregate("192.168.1.10", "192.168.1.11")).containsExactly("192.168.1.10/31");
  }

  @Test
  void fourConsecutiveSlash24sMergeRepeatedlyIntoASlash22() {
    assertThat(aggregate("10.0.3.0/24", "10.0.1.0/24", "10.0.0.0/24", "10.0.2.0/24"))
        .containsExactly("10.0.0.0/22");
  }

  @Test
  void mergeCascadesThroughDifferentLengths() {
    // /26 + /26 -> /25, + /25 -> /24, + /24 -> /23
    assertThat(aggregate("10.0.0.0/26", "10.0.0.64/26", "10.0.0.128/25", "10.0.1.0/24"))
        .containsExactly("10.0.0.0/23");
  }

  @Test
  void adjacentNonSiblingsStayApart() {
    assertThat(aggregate("10.0.1.0/24", "10.0.2.0/24")).containsExactly("10.0.1.0/24", "10.0.2.0/24");
    assertThat(aggregate("fd01:0:0:1::/64", "fd01:0:0:2::/64"))
        .containsExactly("fd01:0:0:1::/64", "fd01:0:0:2::/64");
  }

  @Test
  void siblingsOfDifferentLengthsDoNotMerge() {
    assertThat(aggregate("10.0.0.0/24", "10.0.1.0/25")).containsExactly("10.0.0.0/24", "10.0.1.0/25");
  }

  @Test
  void familiesAreAggregatedSeparatelyAndV4ComesFirst() {
    assertThat(aggregate("fd00::/65", "10.0.0.128/25", "fd00:0:0:0:8000::/65", "10.0.0.0/25", "::/1", "200.0.0.0/8"))
        .containsExactly("10.0.0.0/24", "200.0.0.0/8", "::/1", "fd00::/64");
    // ::/96 holds the IPv4-compatible addresses, but never the IPv4 family's addresses
    assertThat(aggregate("::/96", "10.0.0.0/8")).containsExactly("10.0.0.0/8", "::/96");
  }

  @Test
  void wholeAddressSpaceFromItsHalves() {
    assertThat(aggregate("0.0.0.0/1", "128.0.0.0/1", "::/1", "8000::/1")).containsExactly("0.0.0.0/0", "::/0");
  }

  @Test
  void outputIsSortedAndIndependentOfInputOrder() {
    List<IpPrefix> input = new ArrayList<>(prefixes(
        "172.30.0.0/16", "10.128.0.0/24", "10.128.1.0/24", "fd01::/64", "192.168.1.10", "192.168.1.11", "10.0.0.0/8"));
    List<IpPrefix> expected = Cidrs.aggregate(input);
    assertThat(expected).isSorted();
    Collections.reverse(input);
    assertThat(Cidrs.aggregate(input)).isEqualTo(expected);
    Collections.shuffle(input, new Random(1));
    assertThat(Cidrs.aggregate(input)).isEqualTo(expected);
    assertThat(expected).extracting(IpPrefix::toString)
        .containsExactly("10.0.0.0/8", "172.30.0.0/16", "192.168.1.10/31", "fd01::/64");
  }

  @Test
  void anyContainsChecksEveryPrefix() {
    List<IpPrefix> set = prefixes("10.0.0.0/8", "fd00::/8");
    assertThat(Cidrs.anyContains(set, IpPrefix.parse("10.9.9.9"))).isTrue();
    assertThat(Cidrs.anyContains(set, IpPrefix.parse("fd12::1"))).isTrue();
    assertThat(Cidrs.anyContains(set, IpPrefix.parse("11.0.0.1"))).isFalse();
    assertThat(Cidrs.anyContains(List.of(), IpPrefix.parse("10.0.0.1"))).isFalse();
  }

  /**
   * Property: for random sets of v4 prefixes clustered in a small space (so containment, overlap and
   * siblings are common), the aggregate covers exactly the same addresses, its prefixes are disjoint,
   * and no two of them are mergeable siblings.
   */
  @RepeatedTest(200)
  void randomV4SetsAggregateToTheSameAddressesMinimally(RepetitionInfo info) {
    Random random = new Random(1000 + info.getCurrentRepetition());
    List<IpPrefix> input = new ArrayList<>();
    int count = random.nextInt(40);
    for (int i = 0; i < count; i++) {
      // addresses within 10.0.0.0/22, lengths 22..32
      int offset = random.nextInt(1024);
      byte[] b = {10, 0, (byte) (offset >> 8), (byte) offset};
      input.add(IpPrefix.of(b, 22 + random.nextInt(11)));
    }
    List<IpPrefix> out = Cidrs.aggregate(input);

    // exact coverage: every address of 10.0.0.0/22 (and its neighbours) is covered by both or neither
    for (int offset = -4; offset < 1024 + 4; offset++) {
      long a = 0x0A000000L + offset;
      IpPrefix address = IpPrefix.host(new byte[] {(byte) (a >> 24), (byte) (a >> 16), (byte) (a >> 8), (byte) a});
      assertThat(Cidrs.anyContains(out, address)).as("%s in %s vs %s", address, input, out)
          .isEqualTo(Cidrs.anyContains(input, address));
    }
    assertThat(out).isSorted().doesNotHaveDuplicates();
    for (int i = 0; i < out.size(); i++) {
      for (int j = i + 1; j < out.size(); j++) {
        IpPrefix x = out.get(i);
        IpPrefix y = out.get(j);
        assertThat(overlap(x, y)).as("%s overlaps %s", x, y).isFalse();
        assertThat(siblings(x, y)).as("%s and %s are mergeable siblings", x, y).isFalse();
      }
    }
    assertThat(out.size()).isLessThanOrEqualTo(new java.util.HashSet<>(input).size());
  }

  @RepeatedTest(50)
  void randomMixedFamilySetsKeepTheirRangeUnion(RepetitionInfo info) {
    Random random = new Random(7000 + info.getCurrentRepetition());
    List<IpPrefix> input = new ArrayList<>();
    for (int i = 0; i < 30; i++) {
      boolean v6 = random.nextBoolean();
      byte[] b = new byte[v6 ? 16 : 4];
      b[0] = (byte) (v6 ? 0xfd : 10);
      b[b.length - 1] = (byte) random.nextInt(16);
      int bits = v6 ? 128 : 32;
      input.add(IpPrefix.of(b, bits - random.nextInt(5)));
    }
    List<IpPrefix> out = Cidrs.aggregate(input);
    for (IpFamily family : IpFamily.values()) {
      assertThat(rangeUnion(out, family)).isEqualTo(rangeUnion(input, family));
    }
  }

  private static boolean overlap(IpPrefix x, IpPrefix y) {
    return x.family() == y.family()
        && x.firstAddress().compareTo(y.lastAddress()) <= 0
        && y.firstAddress().compareTo(x.lastAddress()) <= 0;
  }

  private static boolean siblings(IpPrefix x, IpPrefix y) {
    return x.family() == y.family() && x.length() == y.length() && x.length() > 0
        && IpPrefix.of(x.addressBytes(), x.length() - 1).equals(IpPrefix.of(y.addressBytes(), y.length() - 1));
  }

  /** The union of the prefixes' ranges as sorted, disjoint, non-adjacent [first, last] pairs. */
  private static List<BigInteger[]> rangeUnionRaw(List<IpPrefix> prefixes, IpFamily family) {
    List<BigInteger[]> ranges = new ArrayList<>();
    prefixes.stream().filter(p -> p.family() == family)
        .map(p -> new BigInteger[] {p.firstAddress(), p.lastAddress()})
        .sorted((a, b) -> a[0].compareTo(b[0]))
        .forEach(r -> {
          if (!ranges.isEmpty() && ranges.get(ranges.size() - 1)[1].add(BigInteger.ONE).compareTo(r[0]) >= 0) {
            BigInteger[] last = ranges.get(ranges.size() - 1);
            last[1] = last[1].max(r[1]);
          } else {
            ranges.add(r.clone());
          }
        });
    return ranges;
  }

  private static List<String> rangeUnion(List<IpPrefix> prefixes, IpFamily family) {
    return rangeUnionRaw(prefixes, family).stream().map(r -> r[0] + "-" + r[1]).toList();
  }
}

package io.egressservice.ip;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

class IpPrefixTest {

  @Nested
  class Parsing {
    @Test
    void parsesV4HostAsFullLengthPrefix() {
      IpPrefix p = IpPrefix.parse("10.0.0.1");
      assertThat(p.family()).isEqualTo(IpFamily.V4);
      assertThat(p.length()).isEqualTo(32);
      assertThat(p.isHost()).isTrue();
      assertThat(p.addressBytes()).containsExactly(10, 0, 0, 1);
      assertThat(p).hasToString("10.0.0.1");
    }

    @Test
    void parsesV4NetworkAndEdgeValues() {
      assertThat(IpPrefix.parse("10.0.0.0/8").length()).isEqualTo(8);
      assertThat(IpPrefix.parse("0.0.0.0/0")).hasToString("0.0.0.0/0");
      assertThat(IpPrefix.parse("255.255.255.255").addressBytes()).containsExactly(-1, -1, -1, -1);
      assertThat(IpPrefix.parse("10.0.0.1/32")).isEqualTo(IpPrefix.parse("10.0.0.1"));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "::, ::",
        "::1, ::1",
        "fd00::, fd00::",
        "'::ffff:1.2.3.4', '::ffff:1.2.3.4'",
        "'::FFFF:1.2.3.4', '::ffff:1.2.3.4'",
        "FD00::ABCD, fd00::abcd",
        "2001:0DB8:0000:0000:0000:0000:0000:0001, 2001:db8::1",
        "'1:2:3:4:5:6:7::', '1:2:3:4:5:6:7:0'",
        "'::2:3:4:5:6:7:8', '0:2:3:4:5:6:7:8'",
        "'64:ff9b::192.0.2.33', '64:ff9b::c000:221'",
        "'1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304'",
    })
    void parsesV6LiteralsToCanonicalText(String text, String canonical) {
      IpPrefix p = IpPrefix.parse(text);
      assertThat(p.family()).isEqualTo(IpFamily.V6);
      assertThat(p.isHost()).isTrue();
      assertThat(p).hasToString(canonical);
    }

    @Test
    void embeddedIpv4FillsTheLastThirtyTwoBits() {
      assertThat(IpPrefix.parse("::ffff:1.2.3.4").addressBytes())
          .containsExactly(0, 0, 0, 0, 0, 0, 0, 0, 0, 0, -1, -1, 1, 2, 3, 4);
    }

    @Test
    void parsesV6Networks() {
      IpPrefix p = IpPrefix.parse("fd00::/64");
      assertThat(p.length()).isEqualTo(64);
      assertThat(p.isHost()).isFalse();
      assertThat(p).hasToString("fd00::/64");
      assertThat(IpPrefix.parse("::/0")).hasToString("::/0");
    }

    @Test
    void parseHostRefusesNetworks() {
      assertThat(IpPrefix.parseHost("10.0.0.1/32")).hasToString("10.0.0.1");
      assertThatThrownBy(() -> IpPrefix.parseHost("10.0.0.0/8"))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageContaining("'10.0.0.0/8'")
          .hasMessageContaining("network");
    }

    @Test
    void tryParseIsEmptyForBadInput() {
      assertThat(IpPrefix.tryParse("10.0.0.1")).contains(IpPrefix.parse("10.0.0.1"));
      assertThat(IpPrefix.tryParse("nonsense")).isEmpty();
    }

    @Test
    void ofClearsHostBitsAndChecksLength() {
      assertThat(IpPrefix.of(new byte[] {10, 1, 2, 3}, 8)).hasToString("10.0.0.0/8");
      assertThatThrownBy(() -> IpPrefix.of(new byte[] {10, 1, 2, 3}, 33))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> IpPrefix.of(new byte[5], 8)).isInstanceOf(IllegalArgumentException.class);
    }
  }

  @Nested
  class CanonicalText {
    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        // the longest zero run is compressed
        "'1:0:0:2:0:0:0:3', '1:0:0:2::3'",
        // on a tie, the first run
        "'1:0:0:2:0:0:3:4', '1::2:0:0:3:4'",
        "'0:0:1:0:0:1:0:0', '::1:0:0:1:0:0'",
        // a single zero group is not compressed
        "'1:0:2:3:4:5:6:7', '1:0:2:3:4:5:6:7'",
        "'0:1:2:3:4:5:6:7', '0:1:2:3:4:5:6:7'",
        // leading zeros of a group are dropped, hex is lowercase
        "'2001:0db8:00AB:0000:0000:0000:0000:000F', '2001:db8:ab::f'",
        "'0:0:0:0:0:0:0:0', '::'",
        "'fe80:0:0:0:0:0:0:0', 'fe80::'",
    })
    void followsRfc5952(String text, String canonical) {
      assertThat(IpPrefix.parse(text).addressText()).isEqualTo(canonical);
    }

    @Test
    void networksHaveTheirHostBitsCleared() {
      assertThat(IpPrefix.parse("10.1.2.3/8")).hasToString("10.0.0.0/8").isEqualTo(IpPrefix.parse("10.0.0.0/8"));
      assertThat(IpPrefix.parse("10.1.2.3/31")).hasToString("10.1.2.2/31");
      assertThat(IpPrefix.parse("fd00::1:2/64")).hasToString("fd00::/64");
      assertThat(IpPrefix.parse("fd00:ffff::/17")).hasToString("fd00:8000::/17");
    }

    @Test
    void hostsPrintWithoutLengthAndCidrTextAlwaysHasOne() {
      assertThat(IpPrefix.parse("10.0.0.1").cidrText()).isEqualTo("10.0.0.1/32");
      assertThat(IpPrefix.parse("fd00::1").cidrText()).isEqualTo("fd00::1/128");
      assertThat(IpPrefix.parse("fd00::/8").addressText()).isEqualTo("fd00::");
    }

    @Test
    void firstAndLastAddressSpanThePrefix() {
      IpPrefix p = IpPrefix.parse("10.0.0.0/24");
      assertThat(p.lastAddress().subtract(p.firstAddress()).longValue()).isEqualTo(255);
      IpPrefix h = IpPrefix.parse("fd00::1");
      assertThat(h.lastAddress()).isEqualTo(h.firstAddress());
    }

    @Test
    void randomV6AddressesRoundTripAgainstJavaNetInetAddress() throws UnknownHostException {
      Random random = new Random(5952);
      for (int i = 0; i < 500; i++) {
        byte[] bytes = randomV6WithZeroRuns(random);
        IpPrefix p = IpPrefix.host(bytes);
        String text = p.addressText();

        // The text is what an independent parser (literal only: never resolves) reads as the same bytes.
        assertThat(inetBytes(text)).as(text).isEqualTo(bytes);
        // Java's own (uncompressed) text parses back to the same prefix, and ours is a fixed point.
        assertThat(IpPrefix.parse(javaText(bytes))).as(text).isEqualTo(p);
        assertThat(IpPrefix.parse(text).addressText()).isEqualTo(text);
        assertRfc5952Shape(text, bytes);
      }
    }

    @Test
    void matchesIproute2Printing() {
      Privileges.assumeNetAdmin();
      Random random = new Random(42);
      List<IpPrefix> addresses = new ArrayList<>();
      for (String fixed : List.of("::ffff:1.2.3.4", "::1.2.3.4", "::1", "1::", "1:0:0:1::", "::ffff:0.0.0.0",
          "64:ff9b::c000:221", "fd01::2:ffff:ffff:ffff:ffff", "1:0:0:2:0:0:3:4", "0:0:1:0:0:1:0:0")) {
        addresses.add(IpPrefix.parse(fixed));
      }
      for (int i = 0; i < 200; i++) {
        addresses.add(IpPrefix.host(randomV6WithZeroRuns(random)));
      }
      StringBuilder batch = new StringBuilder();
      Map<Integer, IpPrefix> byPriority = new HashMap<>();
      for (int i = 0; i < addresses.size(); i++) {
        int priority = 1000 + i;
        byPriority.put(priority, addresses.get(i));
        batch.append("rule add priority ").append(priority).append(" from ")
            .append(addresses.get(i).cidrText()).append(" lookup 100\n");
      }
      try (Netns ns = Netns.create("ipfx")) {
        ns.execWithInput(batch.toString(), "ip", "-6", "-batch", "-");
        JsonNode rules = ns.json("ip", "-6", "-j", "rule", "show", "table", "100");
        assertThat(rules).hasSize(addresses.size());
        for (JsonNode rule : rules) {
          IpPrefix expected = byPriority.get(rule.path("priority").asInt());
          assertThat(rule.path("src").asText()).as("%s", Arrays.toString(expected.addressBytes()))
              .isEqualTo(expected.addressText());
        }
      }
    }
  }

  @Nested
  class Rejection {
    @ParameterizedTest
    @ValueSource(strings = {
        "010.0.0.1", "10.0.0.01", "256.0.0.1", "10.0.0.256", "1.2.3", "1.2.3.4.5", "1..2.3", "1.2.3.",
        "0x0a.0.0.1", "1.2.3.4/", "1.2.3.4/33", "1.2.3.4/-1", "1.2.3.4/8/8", "1.2.3.4/a",
        "1::2::3", ":::", "1:::2", ":1::", "::1:", "1:2:3:4:5:6:7:8:9", "1:2:3:4:5:6:7", "1:2:3:4:5:6:7:8::",
        "::1/129", "fd00::/200", "12345::", "g::1", "fe80::1%eth0", "fe80::1%2",
        "::ffff:01.2.3.4", "::ffff:1.2.3", "::1.2.3.4:1", "1.2.3.4::", "1:2:3:4:5:6:7:1.2.3.4",
        "localhost", "example.com", "my-node.cluster.local", "dead:beef", "10.0.0.1 10.0.0.2",
        "fd00::\u0661", "\uff11.2.3.4", "10.0.0.0/\u0668",
    })
    void rejectsWithAMessageNamingTheText(String text) {
      assertThatThrownBy(() -> IpPrefix.parse(text))
          .isInstanceOf(IllegalArgumentException.class)
          .hasMessageStartingWith("'" + text + "'");
    }

    @Test
    void explainsLeadingZerosAndZoneIndexes() {
      assertThatThrownBy(() -> IpPrefix.parse("010.0.0.1")).hasMessageContaining("leading zero");
      assertThatThrownBy(() -> IpPrefix.parse("fe80::1%eth0")).hasMessageContaining("zone");
      assertThatThrownBy(() -> IpPrefix.parse("10.0.0.0/33")).hasMessageContaining("prefix length");
    }

    @Test
    void rejectsEmptyAndNull() {
      assertThatThrownBy(() -> IpPrefix.parse("")).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> IpPrefix.parse("  ")).isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> IpPrefix.parse(null)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void neverResolvesHostNames() {
      // "localhost" always resolves; a parser that looked names up would return 127.0.0.1 or ::1.
      assertThat(IpPrefix.tryParse("localhost")).isEmpty();
      assertThat(IpPrefix.tryParse("ip6-localhost")).isEmpty();
    }
  }

  @Nested
  class Relations {
    @Test
    void containsItsSubnetsAndAddressesOnly() {
      IpPrefix net = IpPrefix.parse("10.0.0.0/8");
      assertThat(net.contains(IpPrefix.parse("10.255.255.255"))).isTrue();
      assertThat(net.contains(IpPrefix.parse("10.1.0.0/16"))).isTrue();
      assertThat(net.contains(net)).isTrue();
      assertThat(net.contains(IpPrefix.parse("11.0.0.0"))).isFalse();
      assertThat(net.contains(IpPrefix.parse("10.0.0.0/7"))).isFalse();
      assertThat(IpPrefix.parse("0.0.0.0/0").contains(IpPrefix.parse("255.255.255.255"))).isTrue();
      assertThat(IpPrefix.parse("10.0.0.1").contains(IpPrefix.parse("10.0.0.1"))).isTrue();
      assertThat(IpPrefix.parse("10.0.0.1").contains(IpPrefix.parse("10.0.0.2"))).isFalse();
    }

    @Test
    void containsAgreesWithMaskingTheOtherToThisLengthOnRandomPrefixes() {
      Random random = new Random(3);
      for (int i = 0; i < 20_000; i++) {
        int size = random.nextBoolean() ? 4 : 16;
        byte[] a = new byte[size];
        random.nextBytes(a);
        byte[] b = a.clone();
        b[random.nextInt(size)] ^= (byte) (1 << random.nextInt(8)); // one bit apart, anywhere
        IpPrefix net = IpPrefix.of(a, random.nextInt(size * 8 + 1));
        IpPrefix other = IpPrefix.of(random.nextBoolean() ? a : b, random.nextInt(size * 8 + 1));
        boolean expected = other.length() >= net.length()
            && IpPrefix.of(other.addressBytes(), net.length()).equals(net);
        assertThat(net.contains(other)).as("%s contains %s", net, other).isEqualTo(expected);
      }
    }

    @Test
    void containsNeverCrossesFamilies() {
      assertThat(IpPrefix.parse("::/0").contains(IpPrefix.parse("10.0.0.1"))).isFalse();
      assertThat(IpPrefix.parse("0.0.0.0/0").contains(IpPrefix.parse("::"))).isFalse();
      assertThat(IpPrefix.parse("::/96").contains(IpPrefix.parse("::a00:1"))).isTrue();
      assertThat(IpPrefix.parse("::/96").contains(IpPrefix.parse("10.0.0.1"))).isFalse();
    }

    @Test
    void ordersByFamilyThenAddressThenLength() {
      List<IpPrefix> sorted = new ArrayList<>(List.of(
          IpPrefix.parse("::1"), IpPrefix.parse("10.0.0.0/16"), IpPrefix.parse("9.0.0.0/8"),
          IpPrefix.parse("10.0.0.0/8"), IpPrefix.parse("200.0.0.1"), IpPrefix.parse("10.0.0.1"),
          IpPrefix.parse("::"), IpPrefix.parse("fd00::/8"), IpPrefix.parse("10.0.0.0/24")));
      sorted.sort(null);
      assertThat(sorted).extracting(IpPrefix::toString).containsExactly(
          "9.0.0.0/8", "10.0.0.0/8", "10.0.0.0/16", "10.0.0.0/24", "10.0.0.1", "200.0.0.1",
          "::", "::1", "fd00::/8");
    }

    @Test
    void orderAgreesWithFamilyThenUnsignedBytesThenLengthOnRandomPrefixes() {
      // Near neighbours on purpose: IPv6 prefixes sharing their first 6 bytes, IPv4 ones differing in one bit.
      Random random = new Random(7);
      List<IpPrefix> prefixes = new ArrayList<>();
      for (int i = 0; i < 400; i++) {
        byte[] bytes = new byte[random.nextBoolean() ? 4 : 16];
        random.nextBytes(bytes);
        if (bytes.length == 16) {
          bytes[0] = (byte) 0xfd;
          bytes[5] = (byte) (i % 3);
          Arrays.fill(bytes, 1, 5, (byte) 0);
        } else {
          bytes[0] = (byte) (random.nextBoolean() ? 10 : 200);
        }
        prefixes.add(IpPrefix.of(bytes, random.nextInt(bytes.length * 8 + 1)));
      }
      java.util.Comparator<IpPrefix> reference = (a, b) -> {
        int c = a.family().compareTo(b.family());
        if (c == 0) {
          c = Arrays.compareUnsigned(a.addressBytes(), b.addressBytes());
        }
        return c != 0 ? c : Integer.compare(a.length(), b.length());
      };
      for (IpPrefix a : prefixes) {
        for (IpPrefix b : prefixes) {
          assertThat(Integer.signum(a.compareTo(b))).as("%s vs %s", a, b).isEqualTo(Integer.signum(reference.compare(a, b)));
          assertThat(a.compareTo(b) == 0).isEqualTo(a.equals(b));
        }
      }
    }

    @Test
    void ordersAddressBytesUnsigned() {
      assertThat(IpPrefix.parse("128.0.0.0")).isGreaterThan(IpPrefix.parse("127.255.255.255"));
      assertThat(IpPrefix.parse("ff00::")).isGreaterThan(IpPrefix.parse("7f00::"));
    }

    @Test
    void equalPrefixesAreEqualWithEqualHashCodes() {
      IpPrefix a = IpPrefix.parse("10.1.2.3/8");
      IpPrefix b = IpPrefix.parse("10.0.0.0/8");
      assertThat(a).isEqualTo(b).hasSameHashCodeAs(b);
      assertThat(a.compareTo(b)).isZero();
      assertThat(IpPrefix.parse("FD00::1")).isEqualTo(IpPrefix.parse("fd00:0::1")).hasSameHashCodeAs(
          IpPrefix.parse("fd00:0::1"));
    }

    @Test
    void aNodesPodAddressesHaveDistinctHashCodes() {
      // Hash maps of a plan are keyed by these: colliding hashes (10.128.1.0 and 10.128.0.31 under a
      // byte-wise hash) turned the diff at 1,000 services superlinear.
      java.util.Set<Integer> v4 = new java.util.HashSet<>();
      java.util.Set<Integer> v6 = new java.util.HashSet<>();
      for (int i = 0; i < 5000; i++) {
        v4.add(IpPrefix.parse("10.128." + (i >> 8) + "." + (i & 255)).hashCode());
        v6.add(IpPrefix.parse("fd00:10:128::" + Integer.toHexString(i)).hashCode());
      }
      assertThat(v4).hasSize(5000);
      assertThat(v6).hasSize(5000);
    }

    @Test
    void differentLengthsOrFamiliesAreNotEqual() {
      assertThat(IpPrefix.parse("10.0.0.0/8")).isNotEqualTo(IpPrefix.parse("10.0.0.0/16"));
      assertThat(IpPrefix.parse("::/0")).isNotEqualTo(IpPrefix.parse("0.0.0.0/0"));
      assertThat(IpPrefix.parse("::a00:1")).isNotEqualTo(IpPrefix.parse("10.0.0.1"));
      assertThat(IpPrefix.parse("10.0.0.1")).isNotEqualTo("10.0.0.1");
    }

    @Test
    void addressBytesIsADefensiveCopy() {
      IpPrefix p = IpPrefix.parse("10.0.0.1");
      p.addressBytes()[0] = 99;
      assertThat(p).hasToString("10.0.0.1");
      byte[] input = {10, 0, 0, 1};
      IpPrefix q = IpPrefix.host(input);
      input[0] = 99;
      assertThat(q).hasToString("10.0.0.1");
    }
  }

  /** Random bytes whose 16-bit groups are zero half of the time, so zero runs of every length occur. */
  static byte[] randomV6WithZeroRuns(Random random) {
    byte[] b = new byte[16];
    int style = random.nextInt(10);
    for (int g = 0; g < 8; g++) {
      int v = random.nextBoolean() ? 0 : random.nextInt(0x10000);
      if (style == 0 && g < 5) {
        v = 0; // IPv4-mapped / compatible shapes
      }
      if (style == 0 && g == 5) {
        v = random.nextBoolean() ? 0xffff : 0;
      }
      b[2 * g] = (byte) (v >> 8);
      b[2 * g + 1] = (byte) v;
    }
    return b;
  }

  private static byte[] inetBytes(String literal) throws UnknownHostException {
    // A literal containing ':' is parsed by InetAddress without any name lookup.
    InetAddress a = InetAddress.getByName(literal);
    if (a instanceof Inet4Address) {
      // Java turns IPv4-mapped IPv6 literals into IPv4 addresses; map them back.
      byte[] v6 = new byte[16];
      v6[10] = (byte) 0xff;
      v6[11] = (byte) 0xff;
      System.arraycopy(a.getAddress(), 0, v6, 12, 4);
      return v6;
    }
    return a.getAddress();
  }

  private static String javaText(byte[] bytes) throws UnknownHostException {
    // Inet6Address keeps IPv4-mapped bytes as IPv6 and prints all eight groups.
    return Inet6Address.getByAddress(null, bytes, -1).getHostAddress();
  }

  /** Independent RFC 5952 checks on the text (the IPv4-embedded forms excepted). */
  private static void assertRfc5952Shape(String text, byte[] bytes) {
    assertThat(text).as(text).isEqualTo(text.toLowerCase()).doesNotContain(":::");
    assertThat(text.indexOf("::")).as(text).isEqualTo(text.lastIndexOf("::"));
    if (text.contains(".")) {
      return;
    }
    int[] g = new int[8];
    int longest = 0;
    int run = 0;
    for (int i = 0; i < 8; i++) {
      g[i] = ((bytes[2 * i] & 0xff) << 8) | (bytes[2 * i + 1] & 0xff);
      run = g[i] == 0 ? run + 1 : 0;
      longest = Math.max(longest, run);
    }
    for (String group : text.split(":", -1)) {
      assertThat(group.length() <= 1 || group.charAt(0) != '0').as("no leading zero in %s", text).isTrue();
    }
    if (longest >= 2) {
      assertThat(text).as(text).contains("::");
      String[] sides = text.split("::", -1);
      int before = groupCount(sides[0]);
      int compressed = 8 - before - groupCount(sides[1]);
      assertThat(compressed).as("%s compresses the longest zero run", text).isEqualTo(longest);
      int earlierRun = 0;
      for (int i = 0; i < before; i++) {
        earlierRun = g[i] == 0 ? earlierRun + 1 : 0;
        assertThat(earlierRun).as("%s compresses the first of the longest runs", text).isLessThan(longest);
      }
    } else {
      assertThat(text).as(text).doesNotContain("::");
      assertThat(text.split(":")).hasSize(8);
    }
  }

  private static int groupCount(String side) {
    return side.isEmpty() ? 0 : side.split(":").length;
  }
}

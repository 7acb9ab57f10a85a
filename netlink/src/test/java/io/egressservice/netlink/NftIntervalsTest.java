package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/** Ranges from raw interval-set elements, in any order, without a kernel (the kernel cases: NftSetElementsKernelTest). */
class NftIntervalsTest {

  private static SetElement start(String address) {
    return SetElement.of(IpPrefix.parseHost(address).addressBytes());
  }

  private static SetElement start(String address, String comment) {
    return new SetElement(IpPrefix.parseHost(address).addressBytes(), Optional.empty(), Optional.empty(),
        Optional.empty(), 0, Optional.of(comment));
  }

  private static SetElement end(String address) {
    return new SetElement(IpPrefix.parseHost(address).addressBytes(), Optional.empty(), Optional.empty(),
        Optional.empty(), SetElement.INTERVAL_END, Optional.empty());
  }

  private static List<String> texts(List<NftIntervals.Range> ranges) {
    return ranges.stream().map(r -> r.prefix().map(IpPrefix::toString).orElseGet(
        () -> IpPrefix.host(r.first()) + "-" + IpPrefix.host(r.last()))
        + r.start().comment().map(c -> " " + c).orElse("")).toList();
  }

  @Test
  void startsAndEndsInTheKernelsDescendingOrderBecomeAscendingInclusiveRanges() {
    List<SetElement> dumped = List.of(start("255.255.255.0", "top"), end("192.168.1.21"), start("192.168.1.10"),
        end("192.168.1.10"), start("192.168.1.1"), end("11.0.0.0"), start("10.0.0.0", "a"), end("0.0.0.0"));
    assertThat(texts(NftIntervals.ranges(dumped))).containsExactly("10.0.0.0/8 a", "192.168.1.1-192.168.1.9",
        "192.168.1.10-192.168.1.20", "255.255.255.0/24 top");
  }

  @Test
  void aRangeFromZeroAndOneToTheTopOfIpv6AreKept() {
    assertThat(texts(NftIntervals.ranges(List.of(start("0.0.0.0"), end("1.0.0.0"))))).containsExactly("0.0.0.0/8");
    assertThat(texts(NftIntervals.ranges(List.of(start("0.0.0.0", "all"))))).containsExactly("0.0.0.0/0 all");
    assertThat(texts(NftIntervals.ranges(List.of(end("::"), start("ffff::"), end("2001:db9::"), start("2001:db8::")))))
        .containsExactly("2001:db8::/32", "ffff::/16");
  }

  @Test
  void aSingleAddressIsAHostAndARangeThatIsNoPrefixHasNone() {
    List<NftIntervals.Range> ranges = NftIntervals.ranges(List.of(start("172.16.0.5"), end("172.16.0.6"),
        start("172.16.0.8"), end("172.16.0.11")));
    assertThat(ranges.get(0).prefix()).contains(IpPrefix.parse("172.16.0.5/32"));
    assertThat(ranges.get(1).prefix()).as("172.16.0.8-172.16.0.10").isEmpty();
  }

  @Test
  void concatenatedRangesAreTakenAsTheyAre() {
    byte[] first = {10, 0, 0, 0, 0, 80, 0, 0};
    byte[] last = {10, 0, 0, (byte) 255, 0, 90, 0, 0};
    SetElement e = new SetElement(first, Optional.of(last), Optional.empty(), Optional.empty(), 0, Optional.empty());
    assertThat(NftIntervals.ranges(List.of(e))).containsExactly(new NftIntervals.Range(first, last, e));
    assertThat(NftIntervals.ranges(List.of(e)).get(0).prefix()).as("8-byte keys are no address").isEmpty();
  }
}

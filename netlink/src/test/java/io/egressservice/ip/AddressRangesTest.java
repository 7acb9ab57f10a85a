package io.egressservice.ip;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

class AddressRangesTest {
  private final AddressRanges ranges = new AddressRanges(List.of(IpPrefix.parse("10.5.0.0/16"),
      IpPrefix.parse("10.0.0.0/8"), IpPrefix.parse("192.168.1.10/32"), IpPrefix.parse("192.168.1.11/32"),
      IpPrefix.parse("fd02::/112")));

  @Test
  void anAddressInsideANestedOrOverlappingPrefixIsInside() {
    assertThat(ranges.contains(IpPrefix.parseHost("10.9.0.1"))).isTrue(); // after the nested /16, inside the /8
    assertThat(ranges.contains(IpPrefix.parseHost("10.5.3.3"))).isTrue();
    assertThat(ranges.contains(IpPrefix.parseHost("10.255.255.255"))).isTrue();
    assertThat(ranges.contains(IpPrefix.parseHost("192.168.1.11"))).isTrue();
    assertThat(ranges.contains(IpPrefix.parseHost("fd02::ffff"))).isTrue();
  }

  @Test
  void anAddressBetweenOrBeyondThePrefixesOrOfTheOtherFamilyIsOutside() {
    assertThat(ranges.contains(IpPrefix.parseHost("11.0.0.0"))).isFalse();
    assertThat(ranges.contains(IpPrefix.parseHost("9.255.255.255"))).isFalse();
    assertThat(ranges.contains(IpPrefix.parseHost("192.168.1.12"))).isFalse();
    assertThat(ranges.contains(IpPrefix.parseHost("fd02::1:0"))).isFalse();
    assertThat(ranges.contains(IpPrefix.parseHost("::ffff:10.0.0.1"))).isFalse();
    assertThat(new AddressRanges(List.of()).contains(IpPrefix.parseHost("10.0.0.1"))).isFalse();
  }
}

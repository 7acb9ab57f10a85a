package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import org.junit.jupiter.api.Test;

class RuleModelTest {
  @Test
  void printsLikeIpRule() {
    assertThat(Rule.lookup(IpFamily.V4, 5000, 100).from(IpPrefix.parse("10.0.0.5")).protocol(201))
        .hasToString("5000: from 10.0.0.5 lookup 100 proto 201");
    assertThat(Rule.lookup(IpFamily.V4, 5001, 1000).from(IpPrefix.parse("10.1.0.0/16")).to(IpPrefix.parse("192.168.0.0/24"))
            .fwmark(0x10, 0xff).iif("va").oif("vb").suppressPrefixLength(0))
        .hasToString("5001: from 10.1.0.0/16 to 192.168.0.0/24 fwmark 0x10/0xff iif va oif vb lookup 1000 suppress_prefixlength 0");
    assertThat(Rule.of(IpFamily.V4, 5004, RuleAction.BLACKHOLE).from(IpPrefix.parse("10.2.0.1")).inverted(true))
        .hasToString("5004: not from 10.2.0.1 blackhole");
    assertThat(Rule.goTo(IpFamily.V6, 10, 6000)).hasToString("10: from all goto 6000");
    assertThat(Rule.lookup(IpFamily.V4, 32766, 254)).hasToString("32766: from all lookup main");
  }

  @Test
  void normalisesLikeTheKernel() {
    Rule all = Rule.lookup(IpFamily.V4, 1, 100);
    assertThat(all.from(IpPrefix.parse("0.0.0.0/0"))).isEqualTo(all);
    assertThat(all.fwmark(7, 0xffffffffL)).isEqualTo(all.fwmark(7));
    assertThat(all.suppressPrefixLength(-1)).isEqualTo(all);
  }

  @Test
  void refusesWhatTheKernelWould() {
    assertThatThrownBy(() -> Rule.lookup(IpFamily.V4, 1, 100).from(IpPrefix.parse("2001:db8::1")))
        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("is not V4");
    assertThatThrownBy(() -> Rule.lookup(IpFamily.V4, 1, 100).iif("a-very-long-ifname"))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> Rule.lookup(IpFamily.V4, 1, 100).protocol(256)).isInstanceOf(IllegalArgumentException.class);
  }

  /** In the model: a selector the agent never writes still makes a different rule. */
  @Test
  void aSelectorTheAgentNeverWritesMakesADifferentRuleAndPrintsLikeIpRule() {
    Rule ours = Rule.lookup(IpFamily.V4, 5000, 100).from(IpPrefix.parse("10.0.0.5")).protocol(201);
    Rule tcp9 = ours.withAttribute(new RuleAttribute(NetlinkConstants.FRA_IP_PROTO, new byte[] {6}))
        .withAttribute(new RuleAttribute(NetlinkConstants.FRA_DPORT_RANGE,
            java.nio.ByteBuffer.allocate(4).order(java.nio.ByteOrder.nativeOrder()).putShort((short) 9).putShort((short) 9).array()));

    assertThat(tcp9).isNotEqualTo(ours).hasToString("5000: from 10.0.0.5 ipproto tcp dport 9 lookup 100 proto 201");
    assertThat(ours.tos(0x10)).isNotEqualTo(ours).hasToString("5000: from 10.0.0.5 tos 0x10 lookup 100 proto 201");
    assertThat(tcp9.hasOtherSelectors()).isTrue();
    assertThat(ours.hasOtherSelectors()).isFalse();
    assertThat(tcp9).isEqualTo(ours.withAttribute(tcp9.otherAttributes().get(1)).withAttribute(tcp9.otherAttributes().get(0)));
  }
}

package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.ip.IpPrefix;
import org.junit.jupiter.api.Test;

/** The conntrack values without a kernel: what an entry says about its NAT, how a tuple prints and compares. */
class ConntrackEntryTest {
  private static final IpPrefix POD = IpPrefix.parseHost("10.66.0.5");
  private static final IpPrefix EXTERNAL = IpPrefix.parseHost("192.0.2.10");
  private static final IpPrefix LB_IP = IpPrefix.parseHost("198.51.100.7");

  @Test
  void anEntryWhoseAnswersComeBackToAnotherAddressWasSourceTranslated() {
    ConntrackTuple out = ConntrackTuple.of(17, POD, 40000, EXTERNAL, 7000);
    ConntrackEntry snat = new ConntrackEntry(out, ConntrackTuple.of(17, EXTERNAL, 7000, LB_IP, 40000));
    ConntrackEntry identity = new ConntrackEntry(out, ConntrackTuple.of(17, EXTERNAL, 7000, POD, 40000), 3);

    assertThat(snat.sourceTranslated()).isTrue();
    assertThat(identity.sourceTranslated()).isFalse();
    assertThat(identity.key()).isEqualTo(new ConntrackKey(ConntrackTuple.of(17, POD, 40000, EXTERNAL, 7000), 3));
  }

  @Test
  void aTuplePrintsAsConntrackListsItAndEqualsOneWrittenAlike() {
    ConntrackTuple v6 = ConntrackTuple.of(6, IpPrefix.parseHost("fd00::5"), 443, IpPrefix.parseHost("2001:db8::1"),
        8443);

    assertThat(ConntrackTuple.of(17, POD, 40000, EXTERNAL, 7000)).hasToString("udp 10.66.0.5:40000 > 192.0.2.10:7000")
        .isEqualTo(ConntrackTuple.of(17, POD, 40000, EXTERNAL, 7000))
        .isNotEqualTo(ConntrackTuple.of(17, POD, 40001, EXTERNAL, 7000));
    assertThat(v6).hasToString("tcp [fd00::5]:443 > [2001:db8::1]:8443");
    assertThat(v6.protocol()).isEqualTo(6);
  }

  @Test
  void aTupleJoinsTwoHostsOfOneFamily() {
    assertThatThrownBy(() -> ConntrackTuple.of(17, POD, 1, IpPrefix.parseHost("fd00::1"), 2))
        .isInstanceOf(IllegalArgumentException.class);
    assertThatThrownBy(() -> ConntrackTuple.of(17, IpPrefix.parse("10.0.0.0/8"), 1, EXTERNAL, 2))
        .isInstanceOf(IllegalArgumentException.class);
  }
}

package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The link, address and encapsulated-route writes that steering needs, against the
 * kernel, with {@code ip -j -d link}, {@code ip -j addr} and {@code ip -j route show table N} as the oracle.
 */
class SteeringNetlinkTest {
  private static final VxlanDevice DEVICE = new VxlanDevice("egress-vx", 4799, true, 1444, "egress-service-agent");
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("nlsteer");
  private Netns ns;
  private RtNetlink nl;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    nl = kernel.closeLater(RtNetlink.open(Optional.of(ns.name())));
  }

  private Link ours() {
    return nl.listLinks().stream().filter(l -> l.name().equals("egress-vx")).findFirst().orElseThrow();
  }

  @Test
  void createVxlanMakesACollectMetadataGpeDeviceUpAndTagged() {
    Link created = nl.createVxlan(DEVICE);
    assertThat(created.alias()).contains("egress-service-agent");

    JsonNode link = ns.json("ip", "-j", "-d", "link", "show", "egress-vx").get(0);
    assertThat(link.path("ifalias").asText()).isEqualTo("egress-service-agent");
    assertThat(link.path("mtu").asInt()).isEqualTo(1444);
    assertThat(link.path("flags").toString()).contains("\"UP\"");
    JsonNode data = link.path("linkinfo").path("info_data");
    assertThat(link.path("linkinfo").path("info_kind").asText()).isEqualTo("vxlan");
    assertThat(data.path("external").asBoolean()).isTrue();
    assertThat(data.path("gpe").asBoolean()).isTrue();
    assertThat(data.path("learning").asBoolean()).isFalse();
    assertThat(data.path("port").asInt()).isEqualTo(4799);

    Link read = ours();
    assertThat(read.kind()).contains("vxlan");
    assertThat(read.alias()).contains("egress-service-agent");
    assertThat(read.mtu()).isEqualTo(1444);
    assertThat(read.up()).isTrue();
    assertThat(read.vxlan()).contains(new Link.Vxlan(4799, true, true, false));
    assertThatThrownBy(() -> nl.createVxlan(DEVICE)).isInstanceOf(NetlinkException.AlreadyExists.class);
  }

  @Test
  void linksMadeByIproute2DecodeTheSame() {
    ns.exec("ip", "link", "add", "vx2", "mtu", "1400", "type", "vxlan", "id", "5", "dstport", "4790", "learning");
    ns.exec("ip", "link", "set", "vx2", "alias", "someone-else");
    Link l = nl.listLinks().stream().filter(x -> x.name().equals("vx2")).findFirst().orElseThrow();
    assertThat(l.alias()).contains("someone-else");
    assertThat(l.up()).isFalse();
    assertThat(l.mtu()).isEqualTo(1400);
    assertThat(l.vxlan()).contains(new Link.Vxlan(4790, false, false, true));
  }

  @Test
  void setLinkChangesMtuAndStateAndDeleteLinkRemovesIt() {
    nl.createVxlan(DEVICE);
    int index = ours().index();
    nl.setLink(index, 1300, false, Optional.empty());
    JsonNode link = ns.json("ip", "-j", "link", "show", "egress-vx").get(0);
    assertThat(link.path("mtu").asInt()).isEqualTo(1300);
    assertThat(link.path("flags").toString()).doesNotContain("\"UP\"");
    nl.setLink(index, 0, true, Optional.empty());
    assertThat(ours().up()).isTrue();
    assertThat(ours().mtu()).isEqualTo(1300);

    nl.deleteLink(index);
    assertThat(ns.tryExec("ip", "link", "show", "egress-vx").exitCode()).isNotZero();
    assertThatThrownBy(() -> nl.deleteLink(index)).isInstanceOf(NetlinkException.NotFound.class);
  }

  @Test
  void addAddressPutsALinkScopedHostAddressOnTheDevice() {
    nl.createVxlan(DEVICE);
    Address a = new Address(IpFamily.V4, ours().index(), IpPrefix.parse("169.254.0.73"), 32, Address.SCOPE_LINK);
    nl.addAddress(a);
    JsonNode info = ns.json("ip", "-j", "addr", "show", "dev", "egress-vx").get(0).path("addr_info");
    assertThat(info.toString()).contains("\"local\":\"169.254.0.73\"").contains("\"prefixlen\":32")
        .contains("\"scope\":\"link\"");
    assertThat(nl.listAddresses()).contains(a);
    assertThatThrownBy(() -> nl.addAddress(a)).isInstanceOf(NetlinkException.AlreadyExists.class);
  }

  @Test
  void encapsulatedRoutesOfBothFamiliesReadBackInIproute2AndInOurDecoder() {
    nl.createVxlan(DEVICE);
    int index = ours().index();
    Route v4 = Route.of(IpFamily.V4, 7000, RouteType.UNICAST, Optional.empty()).dev(index).protocol(201)
        .encap(new RouteEncap(IpPrefix.parse("192.168.50.1"), 1, true));
    Route v6 = Route.of(IpFamily.V6, 7000, RouteType.UNICAST, Optional.empty()).dev(index).protocol(201)
        .encap(new RouteEncap(IpPrefix.parse("fd50::1"), 1, true));
    BatchResult<RouteChange> r = nl.applyRoutes(List.of(RouteChange.add(v4), RouteChange.add(v6)));
    assertThat(r.failed()).isEmpty();

    JsonNode r4 = ns.json("ip", "-j", "route", "show", "table", "7000").get(0);
    assertThat(r4.path("dev").asText()).isEqualTo("egress-vx");
    assertThat(r4.path("protocol").asText()).isEqualTo("201");
    assertThat(ns.exec("ip", "route", "show", "table", "7000"))
        .contains("encap ip id 1 src 0.0.0.0 dst 192.168.50.1").contains("csum");
    assertThat(ns.exec("ip", "-6", "route", "show", "table", "7000"))
        .contains("encap ip6 id 1 src :: dst fd50::1").contains("csum");

    Route back4 = nl.listRoutes(IpFamily.V4, 7000).get(0);
    assertThat(back4.encap()).contains(new RouteEncap(IpPrefix.parse("192.168.50.1"), 1, true));
    assertThat(back4.oif()).hasValue(index);
    Route back6 = nl.listRoutes(IpFamily.V6, 7000).get(0);
    assertThat(back6.encap()).contains(new RouteEncap(IpPrefix.parse("fd50::1"), 1, true));

    // iproute2's own encoding decodes the same way (a large VNI, no csum)
    ns.exec("ip", "route", "add", "203.0.113.0/24", "dev", "egress-vx", "table", "7001",
        "encap", "ip", "id", "16000000", "dst", "192.168.50.9");
    assertThat(nl.listRoutes(IpFamily.V4, 7001).get(0).encap())
        .contains(new RouteEncap(IpPrefix.parse("192.168.50.9"), 16000000, false));

    BatchResult<RouteChange> del = nl.applyRoutes(List.of(RouteChange.delete(v4), RouteChange.delete(v6)));
    assertThat(del.failed()).isEmpty();
    assertThat(ns.exec("ip", "route", "show", "table", "7000")).isBlank();
    assertThat(ns.exec("ip", "-6", "route", "show", "table", "7000")).isBlank();
  }
}

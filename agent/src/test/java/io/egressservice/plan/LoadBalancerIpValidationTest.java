package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * An LB ingress IP that cannot be an egress source (0.0.0.0, 127.0.0.1, 224.0.0.1,
 * 255.255.255.255, 169.254.x, a Node address, an in-cluster address, another namespace's LB IP) was SNATed to
 * and the service reported configured, its egress blackholed. Now the host refuses the service with the reason.
 */
class LoadBalancerIpValidationTest {
  static final String NODE = "node-a";

  static Fixture cluster() {
    return Fixture.cluster()
        .node(NODE, List.of("192.168.1.10"), "10.128.0.0/24")
        .node("node-b", List.of("192.168.1.11"), "10.128.1.0/24")
        .config(PlanConfig.defaults().withCidrs(List.of(IpPrefix.parse("10.128.0.0/16")),
            List.of(IpPrefix.parse("172.30.0.0/16")), List.of(IpPrefix.parse("169.254.169.0/29"))));
  }

  static Fixture web(Fixture f, String... lbIps) {
    return f.egress("web", LOAD_BALANCER_IP, "100", NODE)
        .lbService("web", List.of("172.30.0.10"), lbIps)
        .slice("web", "web-1", "IPv4", ep("10.128.0.5", NODE));
  }

  @ParameterizedTest(name = "{0} is {1}")
  @CsvSource({
      "0.0.0.0, an unspecified",
      "127.0.0.1, a loopback address",
      "224.0.0.1, a multicast address",
      "255.255.255.255, the broadcast address",
      "169.254.10.1, a link-local address",
      "192.168.1.11, a Node address",
      "10.128.3.4, inside the in-cluster network 10.128.0.0/16",
      "172.30.0.99, inside the in-cluster network 172.30.0.0/16",
  })
  void anLbIpThatCannotBeAnEgressSourceIsRefusedOnTheHostWithTheReason(String ip, String what) {
    DesiredState s = web(cluster(), ip).plan(NODE);

    assertThat(s.snat()).isEmpty();
    assertThat(s.rules()).isEmpty();
    ServiceOutcome o = outcome(s, "web");
    assertThat(o.configured()).isFalse();
    assertThat(o.reason()).startsWith("LoadBalancer ingress IP " + ip + " is").contains(what)
        .contains("not an egress source");
  }

  @ParameterizedTest
  @CsvSource({"::1, the loopback address", "fe80::1, a link-local address", "ff02::1, a multicast address",
      ":: , the unspecified address"})
  void ipv6SpecialAddressesAreRefusedAsEgressSourcesWithTheReason(String ip, String what) {
    Fixture f = cluster().egress("web", LOAD_BALANCER_IP, "", NODE)
        .lbService("web", List.of("172.30.0.10"), ip.trim())
        .slice("web", "web-1", "IPv6", ep("fd01::5", NODE));

    assertThat(outcome(f.plan(NODE), "web").reason()).contains(what);
  }

  @Test
  void otherNodesLeaveTheServiceToTheHostWhichAloneReportsIt() {
    ServiceOutcome o = outcome(web(cluster(), "127.0.0.1").plan("node-b"), "web");

    assertThat(o.configured()).isFalse();
    assertThat(o.reason()).isEqualTo("handled by node " + NODE + " (status.host)");
  }

  @Test
  void theHostsOwnNodeAddressIsAllowed() {
    // k3s' servicelb gives a Service the node addresses; SNAT to the host's own address is the node's masquerade.
    assertThat(snat(web(cluster(), "192.168.1.10").plan(NODE))).containsExactly("10.128.0.5 -> 192.168.1.10 default/web");
  }

  @Test
  void aRefusedIpIsSkippedAndTheNextUsableOneOfItsFamilyIsTaken() {
    DesiredState s = web(cluster(), "127.0.0.1", "5.5.5.5").plan(NODE);

    assertThat(snat(s)).containsExactly("10.128.0.5 -> 5.5.5.5 default/web");
    assertThat(Fixture.skipped(s, "web")).singleElement().asString().startsWith("127.0.0.1: LoadBalancer ingress IP");
  }

  @Test
  void anLbIpOfAServiceOfAnotherNamespaceStaysWithTheOlderService() {
    Instant older = Instant.parse("2026-01-01T00:00:00Z");
    Instant newer = Instant.parse("2026-03-01T00:00:00Z");
    Fixture f = cluster()
        .service(new ServiceInfo(new ObjectRef("shop", "web"), "LoadBalancer", List.of("172.30.0.10"),
            List.of(new ServiceInfo.Ingress("5.5.5.5", "")), true, Optional.of(older)))
        .egress("shop", "web", LOAD_BALANCER_IP, "", NODE, Optional.empty())
        .slice("shop", "web", "web-1", "IPv4", ep("10.128.0.5", NODE))
        .service(new ServiceInfo(new ObjectRef("evil", "twin"), "LoadBalancer", List.of("172.30.0.66"),
            List.of(new ServiceInfo.Ingress("5.5.5.5", "")), true, Optional.of(newer)))
        .egress("evil", "twin", LOAD_BALANCER_IP, "", NODE, Optional.empty())
        .slice("evil", "twin", "twin-1", "IPv4", ep("10.128.0.66", NODE));

    DesiredState s = f.plan(NODE);

    assertThat(snat(s)).containsExactly("10.128.0.5 -> 5.5.5.5 shop/web");
    assertThat(outcome(s, "twin").reason())
        .isEqualTo("LoadBalancer ingress IP 5.5.5.5 is also held by Service shop/web of another namespace, which is"
            + " older and keeps it as its egress source");
  }

  @Test
  void servicesOfOneNamespaceMayShareAnLbIp() {
    Fixture f = web(cluster(), "5.5.5.5")
        .egress("dns-udp", LOAD_BALANCER_IP, "", NODE)
        .lbService("dns-udp", List.of("172.30.0.11"), "5.5.5.5")
        .slice("dns-udp", "dns-udp-1", "IPv4", ep("10.128.0.6", NODE));

    assertThat(snat(f.plan(NODE))).containsExactly("10.128.0.5 -> 5.5.5.5 default/web",
        "10.128.0.6 -> 5.5.5.5 default/dns-udp");
  }

  @Test
  void aRefusedServiceClaimsNoEndpointSoAYoungerServiceGetsIt() {
    Fixture f = cluster()
        .egress(Fixture.NS, "bad", LOAD_BALANCER_IP, "", NODE, Optional.of(Instant.parse("2026-01-01T00:00:00Z")))
        .lbService("bad", List.of("172.30.0.12"), "0.0.0.0")
        .slice("bad", "bad-1", "IPv4", ep("10.128.0.5", NODE))
        .egress(Fixture.NS, "web", LOAD_BALANCER_IP, "", NODE, Optional.of(Instant.parse("2026-02-01T00:00:00Z")))
        .lbService("web", List.of("172.30.0.10"), "5.5.5.5")
        .slice("web", "web-1", "IPv4", ep("10.128.0.5", NODE));

    assertThat(snat(f.plan(NODE))).containsExactly("10.128.0.5 -> 5.5.5.5 default/web");
  }
}

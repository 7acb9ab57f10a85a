package io.egressservice.plan;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.inClusterRules;
import static io.egressservice.plan.Fixture.throwRoutes;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.skipped;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.Fixture.sourceRules;
import static io.egressservice.plan.Fixture.sportRules;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static io.egressservice.plan.SourceIpBy.NETWORK;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.egressservice.ip.IpPrefix;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;

/**
 * The plan, row by row of DESIGN.md section 1, and the scenarios of OVN-Kubernetes' node-controller
 * tests (go-controller/pkg/node/egress_service_test.go) in our own words. As there: node "node",
 * cluster subnet 10.128.0.0/16, services 10.129.0.0/16, host-network endpoint 192.168.18.15.
 */
class PlannerTest {
  static final String NODE = "node";

  /** The base cluster of OVN-Kubernetes' tests: this node and another, both on 10.128.0.0/16. */
  static Fixture ovnCluster() {
    return Fixture.cluster()
        .node(NODE, List.of("192.168.18.15"), "10.128.0.0/24")
        .node("other", List.of("192.168.18.16"), "10.128.1.0/24")
        .config(PlanConfig.defaults().withCidrs(
            List.of(IpPrefix.parse("10.128.0.0/16")), List.of(IpPrefix.parse("10.129.0.0/16")), List.of()));
  }

  /** svc1 of the OVN tests: ClusterIP 10.129.0.2, LB 5.5.5.5, endpoints 10.128.0.3 + host-network. */
  static Fixture withSvc1(Fixture f, String network, String host) {
    return f.egress("service1", LOAD_BALANCER_IP, network, host)
        .lbService("service1", List.of("10.129.0.2"), "5.5.5.5")
        .slice("service1", "service1-v4", "IPv4", ep("10.128.0.3", NODE), ep("192.168.18.15", NODE));
  }

  /**
   * OVN-Kubernetes' local gateway path for ETP=Local (LB -> 169.254.169.3:nodePort -> pod);
   * the reply's routing decision sees the masquerade IP and the node port, so OVN-Kubernetes adds
   * {@code from <masquerade IP> sport <nodePort>} per family with an ingress IP, when ETP is Local.
   */
  @Nested
  class EtpLocalMasqueradeRules {
    final List<IpPrefix> masquerade = List.of(IpPrefix.parse("169.254.169.3"), IpPrefix.parse("fd69::3"));

    Fixture svc2(String host, SourceIpBy mode) {
      return ovnCluster()
          .config(PlanConfig.defaults().withCidrs(List.of(IpPrefix.parse("10.128.0.0/16")),
              List.of(IpPrefix.parse("10.129.0.0/16")), List.of()).withEtpLocalMasqueradeIps(masquerade))
          .egress("service2", mode, "100", host)
          .lbService("service2", List.of("10.129.0.10"), "5.5.5.6")
          .trafficPolicy("service2", "Local", 30300)
          .slice("service2", "service2-v4", "IPv4", ep("10.128.0.11", NODE));
    }

    @Test
    void etpLocalOnTheHostAddsTheMasqueradeRuleWithTheNodePort() {
      DesiredState s = svc2(NODE, LOAD_BALANCER_IP).plan(NODE);

      assertThat(sportRules(s)).containsExactly("5000: from 169.254.169.3 sport 30300 lookup 100 default/service2");
      assertThat(sourceRules(s)).containsExactlyInAnyOrder(
          "5000: from 10.128.0.11 lookup 100 default/service2", "5000: from 10.129.0.10 lookup 100 default/service2");
    }

    @Test
    void etpLocalWithHostAllAddsTheMasqueradeRuleToo() {
      DesiredState s = svc2("ALL", NETWORK).plan(NODE);

      assertThat(sportRules(s)).containsExactly("5000: from 169.254.169.3 sport 30300 lookup 100 default/service2");
    }

    @Test
    void etpChangesAddAndRemoveTheMasqueradeRule() {
      Fixture f = svc2("ALL", NETWORK).trafficPolicy("service2", "Cluster", 30300);
      assertThat(sportRules(f.plan(NODE))).isEmpty();

      f.trafficPolicy("service2", "Local", 30300);
      assertThat(sportRules(f.plan(NODE))).containsExactly(
          "5000: from 169.254.169.3 sport 30300 lookup 100 default/service2");

      f.trafficPolicy("service2", "Cluster", 30300);
      assertThat(sportRules(f.plan(NODE))).isEmpty();
    }

    @Test
    void eachFamilyWithAnIngressIpGetsItsMasqueradeRuleForEveryNodePort() {
      Fixture f = svc2(NODE, LOAD_BALANCER_IP)
          .lbService("service2", List.of("10.129.0.10", "fd00:10:129::10"), "5.5.5.6", "5555::6")
          .trafficPolicy("service2", "Local", 30300, 30301, 30300);

      assertThat(sportRules(f.plan(NODE))).containsExactlyInAnyOrder(
          "5000: from 169.254.169.3 sport 30300 lookup 100 default/service2",
          "5000: from 169.254.169.3 sport 30301 lookup 100 default/service2",
          "5000: from fd69::3 sport 30300 lookup 100 default/service2",
          "5000: from fd69::3 sport 30301 lookup 100 default/service2");

      f.lbService("service2", List.of("10.129.0.10", "fd00:10:129::10"), "5555::6")
          .trafficPolicy("service2", "Local", 30300);
      assertThat(sportRules(f.plan(NODE))).containsExactly("5000: from fd69::3 sport 30300 lookup 100 default/service2");
    }

    @Test
    void withoutTheMasqueradeIpsOrANetworkThereIsNoSuchRule() {
      Fixture f = svc2(NODE, LOAD_BALANCER_IP).config(PlanConfig.defaults());
      assertThat(sportRules(f.plan(NODE))).isEmpty();

      f = svc2(NODE, LOAD_BALANCER_IP).egress("service2", LOAD_BALANCER_IP, "", NODE);
      assertThat(sportRules(f.plan(NODE))).isEmpty();
    }

    @Test
    void inMarkModeTheMasqueradeRuleStaysARuleAndBringsNoUnscopedInClusterRules() {
      Fixture f = svc2(NODE, LOAD_BALANCER_IP);
      f.config(f.inputs(NODE).config().withRuleMode(RuleMode.MARK, PlanConfig.DEFAULT_MARK_MASK));

      DesiredState s = f.plan(NODE);

      assertThat(sportRules(s)).containsExactly("5000: from 169.254.169.3 sport 30300 lookup 100 default/service2");
      assertThat(s.marks()).extracting(m -> m.source().toString()).containsExactlyInAnyOrder("10.128.0.11", "10.129.0.10");
      assertThat(s.rules()).filteredOn(r -> r.to().isPresent()).allMatch(r -> r.fwmark().isPresent());
    }
  }

  @Nested
  class OvnKubernetesScenarios {
    @Test
    void loadBalancerIpWithoutNetworkSnatsTheClusterNetworkedEndpointAndAddsNoRules() {
      DesiredState s = withSvc1(ovnCluster(), "", NODE).plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/service1");
      assertThat(s.rules()).isEmpty();
      assertThat(skipped(s, "service1")).singleElement().asString()
          .startsWith("192.168.18.15: host-network endpoint");
      assertThat(outcome(s, "service1").configured()).isTrue();
    }

    @Test
    void egressServiceDeletedLeavesNothing() {
      Fixture f = withSvc1(ovnCluster(), "mynetwork", NODE).networkName("mynetwork", 100);
      assertThat(f.plan(NODE).snat()).isNotEmpty();

      DesiredState s = f.removeEgress("service1").plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(s.snat()).isEmpty();
      assertThat(s.services()).isEmpty();
    }

    @Test
    void networkOnTheHostRoutesEndpointsAndClusterIpsOfBothServices() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE)
          .egress("service2", LOAD_BALANCER_IP, "100", NODE)
          .lbService("service2", List.of("10.129.0.10"), "5.5.5.6")
          .slice("service2", "service2-v4", "IPv4", ep("10.128.0.11", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(sourceRules(s)).containsExactly(
          "5000: from 10.128.0.3 lookup 100 default/service1",
          "5000: from 10.128.0.11 lookup 100 default/service2",
          "5000: from 10.129.0.2 lookup 100 default/service1",
          "5000: from 10.129.0.10 lookup 100 default/service2");
      assertThat(snat(s)).containsExactly(
          "10.128.0.3 -> 5.5.5.5 default/service1", "10.128.0.11 -> 5.5.5.6 default/service2");
    }

    @Test
    void hostAllRoutesOnlyLocalEndpointsAndClusterIpsWithoutSnat() {
      Fixture f = ovnCluster()
          .egress("service1", NETWORK, "100", "ALL")
          .lbService("service1", List.of("10.129.0.2"), "5.5.5.5")
          .slice("service1", "service1-v4", "IPv4",
              ep("10.128.0.3", NODE), ep("192.168.18.15", NODE), ep("10.128.1.5", "other"));

      DesiredState s = f.plan(NODE);

      assertThat(sourceRules(s)).containsExactly(
          "5000: from 10.128.0.3 lookup 100 default/service1",
          "5000: from 10.129.0.2 lookup 100 default/service1");
      assertThat(s.snat()).isEmpty();
      DesiredState other = f.plan("other");
      assertThat(sourceRules(other)).containsExactly(
          "5000: from 10.128.1.5 lookup 100 default/service1",
          "5000: from 10.129.0.2 lookup 100 default/service1");
    }

    @Test
    void networkChangedMovesEveryRuleToTheNewTable() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE);
      assertThat(sourceRules(f.plan(NODE))).allMatch(r -> r.contains("lookup 100"));

      DesiredState s = withSvc1(f, "200", NODE).plan(NODE);

      assertThat(sourceRules(s)).containsExactly(
          "5000: from 10.128.0.3 lookup 200 default/service1",
          "5000: from 10.129.0.2 lookup 200 default/service1");
      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/service1");
    }

    @Test
    void networkRemovedDropsTheRulesAndKeepsTheSnat() {
      DesiredState s = withSvc1(withSvc1(ovnCluster(), "100", NODE), "", NODE).plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/service1");
    }

    @Test
    void dualStackServiceSnatsEachFamilyToItsOwnLoadBalancerIp() {
      Fixture f = ovnCluster()
          .node(NODE, List.of("192.168.18.15", "fc00::15"), "10.128.0.0/24", "fd00:10:128::/64")
          .egress("service1", LOAD_BALANCER_IP, "100", NODE)
          .lbService("service1", List.of("10.129.0.2", "fd00:10:129::2"), "5.5.5.5", "5555::5")
          .slice("service1", "s-v4", "IPv4", ep("10.128.0.3", NODE))
          .slice("service1", "s-v6", "IPv6", ep("fd00:10:128::3", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(snat(s)).containsExactly(
          "10.128.0.3 -> 5.5.5.5 default/service1", "fd00:10:128::3 -> 5555::5 default/service1");
      assertThat(sourceRules(s)).containsExactly(
          "5000: from 10.128.0.3 lookup 100 default/service1",
          "5000: from 10.129.0.2 lookup 100 default/service1",
          "5000: from fd00:10:128::3 lookup 100 default/service1",
          "5000: from fd00:10:129::2 lookup 100 default/service1");
    }

    @Test
    void endpointsAddedRemovedAndMovedFollowTheSlices() {
      Fixture f = ovnCluster().egress("service1", NETWORK, "100", "ALL")
          .lbService("service1", List.of("10.129.0.2"), "5.5.5.5")
          .slice("service1", "s1", "IPv4", ep("10.128.0.3", NODE));
      assertThat(sourceRules(f.plan(NODE))).contains("5000: from 10.128.0.3 lookup 100 default/service1");

      f.slice("service1", "s1", "IPv4", ep("10.128.0.3", NODE), ep("10.128.0.4", NODE));
      assertThat(sourceRules(f.plan(NODE))).contains("5000: from 10.128.0.4 lookup 100 default/service1");

      f.slice("service1", "s1", "IPv4", ep("10.128.0.4", NODE));
      assertThat(sourceRules(f.plan(NODE))).noneMatch(r -> r.contains("10.128.0.3"));

      // The pod is rescheduled: its new address lives on the other node.
      f.slice("service1", "s1", "IPv4", ep("10.128.1.4", "other"));
      assertThat(sourceRules(f.plan(NODE))).containsExactly("5000: from 10.129.0.2 lookup 100 default/service1");
      assertThat(sourceRules(f.plan("other"))).contains("5000: from 10.128.1.4 lookup 100 default/service1");
    }

    @Test
    void notReadyAndTerminatingEndpointsKeepTheServiceIdentity() {
      // EndpointSliceInfo carries no readiness on purpose: a draining pod still sends egress traffic.
      Fixture f = withSvc1(ovnCluster(), "", NODE)
          .slice("service1", "service1-v4", "IPv4", ep("10.128.0.3", NODE), ep("10.128.0.7", NODE));

      assertThat(snat(f.plan(NODE))).containsExactly(
          "10.128.0.3 -> 5.5.5.5 default/service1", "10.128.0.7 -> 5.5.5.5 default/service1");
    }

    @Test
    void loadBalancerIngressIpRemovedUnconfiguresTheService() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE).lbService("service1", List.of("10.129.0.2"));

      DesiredState s = f.plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(s.snat()).isEmpty();
      assertThat(outcome(s, "service1").configured()).isFalse();
      assertThat(outcome(s, "service1").reason()).contains("no LoadBalancer ingress IP");
    }

    @Test
    void serviceTypeChangedAwayFromLoadBalancerUnconfiguresTheService() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE)
          .service(Fixture.NS, "service1", "ClusterIP", List.of("10.129.0.2"), List.of());

      DesiredState s = f.plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(s.snat()).isEmpty();
      assertThat(outcome(s, "service1").reason()).isEqualTo("Service type is ClusterIP, not LoadBalancer");
    }

    @Test
    void twoServicesOnTwoNetworksEachGetTheirOwnTable() {
      Fixture f = ovnCluster()
          .egress("net1", NETWORK, "101", "ALL").lbService("net1", List.of("10.129.0.11"), "5.5.5.11")
          .slice("net1", "net1-a", "IPv4", ep("10.128.0.11", NODE))
          .egress("net2", NETWORK, "102", "ALL").lbService("net2", List.of("10.129.0.12"), "5.5.5.12")
          .slice("net2", "net2-a", "IPv4", ep("10.128.0.12", NODE));

      assertThat(sourceRules(f.plan(NODE))).containsExactly(
          "5000: from 10.128.0.11 lookup 101 default/net1",
          "5000: from 10.128.0.12 lookup 102 default/net2",
          "5000: from 10.129.0.11 lookup 101 default/net1",
          "5000: from 10.129.0.12 lookup 102 default/net2");
    }

    @Test
    void differsFromOvnK_endpointClaimedByTwoServicesGoesToTheOlderOneOnly() {
      Instant older = Instant.parse("2026-01-01T00:00:00Z");
      Instant newer = Instant.parse("2026-02-01T00:00:00Z");
      Fixture f = ovnCluster()
          .egress("ns", "young", LOAD_BALANCER_IP, "101", NODE, Optional.of(newer))
          .service("ns", "young", "LoadBalancer", List.of("10.129.0.21"), List.of(new ServiceInfo.Ingress("5.5.5.21", "")))
          .slice("ns", "young", "young-a", "IPv4", ep("10.128.0.50", NODE))
          .egress("ns", "old", LOAD_BALANCER_IP, "102", NODE, Optional.of(older))
          .service("ns", "old", "LoadBalancer", List.of("10.129.0.22"), List.of(new ServiceInfo.Ingress("5.5.5.22", "")))
          .slice("ns", "old", "old-a", "IPv4", ep("10.128.0.50", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.50 -> 5.5.5.22 ns/old");
      assertThat(sourceRules(s)).contains("5000: from 10.128.0.50 lookup 102 ns/old")
          .noneMatch(r -> r.equals("5000: from 10.128.0.50 lookup 101 ns/young"));
      assertThat(skipped(s, "young")).containsExactly(
          "10.128.0.50: also an endpoint of ns/old, whose EgressService is older and owns it");
    }

    @Test
    void differsFromOvnK_withoutTimestampsTheConflictGoesToTheFirstByNamespaceAndName() {
      Fixture f = ovnCluster()
          .egress("b", NETWORK, "101", "ALL").lbService("b", List.of(), "5.5.5.1")
          .slice("b", "b1", "IPv4", ep("10.128.0.50", NODE))
          .egress("a", NETWORK, "102", "ALL").lbService("a", List.of(), "5.5.5.2")
          .slice("a", "a1", "IPv4", ep("10.128.0.50", NODE));

      assertThat(sourceRules(f.plan(NODE))).containsExactly("5000: from 10.128.0.50 lookup 102 default/a");
    }

    @Test
    void differsFromOvnK_rulesCarryOurProtocolSoForeignRulesAtTheSamePriorityAreNotOurs() {
      DesiredState s = withSvc1(ovnCluster(), "100", NODE).plan(NODE);

      assertThat(s.ruleProtocol()).isEqualTo(PlanConfig.DEFAULT_RULE_PROTOCOL);
      assertThat(s.priority()).isEqualTo(5000);
    }

    @Test
    void differsFromOvnK_inClusterDestinationsAreThrownBackFromTheServiceTableNotRoutedByRulesForAll() {
      DesiredState s = withSvc1(ovnCluster(), "100", NODE).plan(NODE);

      // Pod (10.128.0.0/16) and service (10.129.0.0/16) networks aggregate into one prefix; Node
      // addresses count exactly. No rule at P-1: nothing that did not opt in is routed differently.
      assertThat(inClusterRules(s)).isEmpty();
      assertThat(throwRoutes(s)).containsExactly(
          "throw 10.128.0.0/15 table 100", "throw 192.168.18.15/32 table 100", "throw 192.168.18.16/32 table 100");
      assertThat(s.inCluster()).extracting(Object::toString).containsExactly(
          "10.128.0.0/15", "192.168.18.15", "192.168.18.16");
    }
  }

  @Nested
  class WhoActs {
    @Test
    void absentSourceIpByMeansLoadBalancerIpAndOnlyTheHostActs() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE);

      assertThat(f.plan(NODE).snat()).hasSize(1);
      DesiredState other = f.plan("other");
      assertThat(other.rules()).isEmpty();
      assertThat(other.snat()).isEmpty();
      assertThat(outcome(other, "service1").reason()).isEqualTo("handled by node node (status.host)");
    }

    @Test
    void loadBalancerIpHostActsForAllEndpointsAndReportsTheRemoteOnes() {
      Fixture f = withSvc1(ovnCluster(), "", NODE)
          .slice("service1", "service1-v4", "IPv4", ep("10.128.0.3", NODE), ep("10.128.1.9", "other"));

      DesiredState s = f.plan(NODE);

      assertThat(snat(s)).containsExactly(
          "10.128.0.3 -> 5.5.5.5 default/service1", "10.128.1.9 -> 5.5.5.5 default/service1");
      assertThat(outcome(s, "service1").remoteEndpoints()).containsExactly("10.128.1.9");
    }

    @Test
    void networkModeNodeWithoutLocalEndpointsStillRoutesTheClusterIpForInboundReplies() {
      Fixture f = ovnCluster().egress("service1", NETWORK, "100", "ALL")
          .lbService("service1", List.of("10.129.0.2"), "5.5.5.5")
          .slice("service1", "s", "IPv4", ep("10.128.1.5", "other"));

      assertThat(sourceRules(f.plan(NODE))).containsExactly("5000: from 10.129.0.2 lookup 100 default/service1");
    }

    @Test
    void networkModeDoesNotNeedAnIngressIp() {
      Fixture f = ovnCluster().egress("service1", NETWORK, "100", "ALL")
          .lbService("service1", List.of("10.129.0.2"))
          .slice("service1", "s", "IPv4", ep("10.128.0.5", NODE));

      assertThat(sourceRules(f.plan(NODE))).contains("5000: from 10.128.0.5 lookup 100 default/service1");
    }

    @Test
    void networkModeEndpointWithoutNodeNameIsLocalWhenInThisNodesPodCidr() {
      Fixture f = ovnCluster().egress("service1", NETWORK, "100", "ALL")
          .lbService("service1", List.of())
          .slice("service1", "s", "IPv4", ep("10.128.0.8", null), ep("10.128.1.8", null));

      assertThat(sourceRules(f.plan(NODE))).containsExactly("5000: from 10.128.0.8 lookup 100 default/service1");
      assertThat(sourceRules(f.plan("other"))).containsExactly("5000: from 10.128.1.8 lookup 100 default/service1");
    }

    @Test
    void statusHostEmptyMeansNotAllocated() {
      DesiredState s = withSvc1(ovnCluster(), "100", "").plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(outcome(s, "service1").reason()).startsWith("not allocated");
    }

    @Test
    void statusHostAllWithLoadBalancerIpIsAStaleStatusAndNothingIsDone() {
      DesiredState s = withSvc1(ovnCluster(), "100", "ALL").plan(NODE);

      assertThat(s.snat()).isEmpty();
      assertThat(outcome(s, "service1").reason()).contains("status.host is ALL");
    }

    @Test
    void networkModeWithANodeNameAsHostWaitsForTheAllocator() {
      DesiredState s = ovnCluster().egress("service1", NETWORK, "100", NODE)
          .lbService("service1", List.of("10.129.0.2"), "5.5.5.5").plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(outcome(s, "service1").reason()).contains("needs ALL");
    }

    @Test
    void networkModeWithoutNetworkHasNothingToDo() {
      DesiredState s = ovnCluster().egress("service1", NETWORK, "", "ALL")
          .lbService("service1", List.of("10.129.0.2"), "5.5.5.5").plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(s.snat()).isEmpty();
      assertThat(outcome(s, "service1").configured()).isFalse();
    }

    @Test
    void servicesThatDidNotOptInAreNeverTouched() {
      Fixture f = ovnCluster()
          .lbService("plain", List.of("10.129.0.99"), "5.5.5.99")
          .slice("plain", "plain-a", "IPv4", ep("10.128.0.99", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(s.snat()).isEmpty();
      assertThat(s.services()).isEmpty();
    }
  }

  @Nested
  class Refusals {
    @Test
    void egressServiceWithoutServiceIsRefused() {
      DesiredState s = ovnCluster().egress("lonely", LOAD_BALANCER_IP, "100", NODE).plan(NODE);

      assertThat(outcome(s, "lonely").configured()).isFalse();
      assertThat(outcome(s, "lonely").reason()).startsWith("no Service default/lonely");
    }

    @Test
    void hostnameOnlyIngressGivesNoSnat() {
      DesiredState s = ovnCluster().egress("svc", LOAD_BALANCER_IP, "", NODE)
          .service(Fixture.NS, "svc", "LoadBalancer", List.of("10.129.0.2"),
              List.of(new ServiceInfo.Ingress("", "lb.example.com")))
          .slice("svc", "s", "IPv4", ep("10.128.0.3", NODE)).plan(NODE);

      assertThat(s.snat()).isEmpty();
      assertThat(outcome(s, "svc").reason()).contains("only a hostname (lb.example.com)");
    }

    @Test
    void theFirstIngressIpOfEachFamilyIsTheLoadBalancerIp() {
      DesiredState s = withSvc1(ovnCluster(), "", NODE)
          .lbService("service1", List.of("10.129.0.2"), "6.6.6.6", "5555::1", "7.7.7.7").plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.3 -> 6.6.6.6 default/service1");
    }

    /** As OVN-Kubernetes, only SNAT needs an LB IP of the family; the network still applies. */
    @Test
    void anEndpointOfAFamilyWithoutLoadBalancerIpIsRoutedThroughTheNetworkButNotSnated() {
      Fixture f = ovnCluster()
          .egress("svc", LOAD_BALANCER_IP, "100", NODE)
          .lbService("svc", List.of("10.129.0.2", "fd00:10:129::2"), "5.5.5.5")
          .slice("svc", "v4", "IPv4", ep("10.128.0.3", NODE))
          .slice("svc", "v6", "IPv6", ep("fd00::3", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/svc");
      assertThat(sourceRules(s)).containsExactlyInAnyOrder(
          "5000: from 10.128.0.3 lookup 100 default/svc",
          "5000: from 10.129.0.2 lookup 100 default/svc",
          "5000: from fd00::3 lookup 100 default/svc",
          "5000: from fd00:10:129::2 lookup 100 default/svc");
      assertThat(skipped(s, "svc")).containsExactly(
          "fd00::3: the Service has no IPv6 LoadBalancer ingress IP: routed to table 100 but not SNATed"
              + " (leaves with its own address)");
      assertThat(outcome(s, "svc").configured()).isTrue();
    }

    @Test
    void inMarkModeTheEndpointOfAFamilyWithoutLoadBalancerIpIsMarkedForTheNetwork() {
      Fixture f = ovnCluster()
          .egress("svc", LOAD_BALANCER_IP, "100", NODE)
          .lbService("svc", List.of("10.129.0.2", "fd00:10:129::2"), "5.5.5.5")
          .slice("svc", "v4", "IPv4", ep("10.128.0.3", NODE))
          .slice("svc", "v6", "IPv6", ep("fd00::3", NODE));
      f.config(PlanConfig.defaults().withCidrs(List.of(IpPrefix.parse("10.128.0.0/16")),
          List.of(IpPrefix.parse("10.129.0.0/16")), List.of()).withRuleMode(RuleMode.MARK, PlanConfig.DEFAULT_MARK_MASK));

      DesiredState s = f.plan(NODE);

      assertThat(s.marks()).extracting(m -> m.source() + " -> " + m.table()).containsExactlyInAnyOrder(
          "10.128.0.3 -> 100", "10.129.0.2 -> 100", "fd00::3 -> 100", "fd00:10:129::2 -> 100");
      assertThat(s.rules()).filteredOn(r -> r.fwmark().isPresent() && r.to().isEmpty())
          .extracting(RuleSpec::family).containsExactlyInAnyOrder(io.egressservice.ip.IpFamily.V4,
              io.egressservice.ip.IpFamily.V6);
      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/svc");
    }

    @Test
    void withoutNetworkAnEndpointOfAFamilyWithoutLoadBalancerIpIsLeftAlone() {
      Fixture f = ovnCluster()
          .egress("svc", LOAD_BALANCER_IP, "", NODE)
          .lbService("svc", List.of("10.129.0.2", "fd00:10:129::2"), "5.5.5.5")
          .slice("svc", "v4", "IPv4", ep("10.128.0.3", NODE))
          .slice("svc", "v6", "IPv6", ep("fd00::3", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/svc");
      assertThat(s.rules()).isEmpty();
      assertThat(skipped(s, "svc")).containsExactly(
          "fd00::3: the Service has no IPv6 LoadBalancer ingress IP: not SNATed");
    }

    @Test
    void hostNetworkEndpointsAreRefusedByNodeAddressAndByPodCidr() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE)
          .slice("service1", "service1-v4", "IPv4",
              ep("192.168.18.16", "other"), ep("172.16.5.5", NODE), ep("10.128.0.3", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/service1");
      assertThat(skipped(s, "service1")).containsExactly(
          "192.168.18.16: host-network endpoint (a Node address): the node's own traffic is never changed",
          "172.16.5.5: outside the pod CIDRs (a host-network endpoint?): never touched");
    }

    @Test
    void withoutKnownPodCidrsOnlyNodeAddressesMarkHostNetworkEndpoints() {
      Fixture f = Fixture.cluster().node(NODE, List.of("192.168.18.15"))
          .egress("svc", LOAD_BALANCER_IP, "", NODE).lbService("svc", List.of(), "5.5.5.5")
          .slice("svc", "s", "IPv4", ep("172.16.5.5", NODE), ep("192.168.18.15", NODE));

      assertThat(snat(f.plan(NODE))).containsExactly("172.16.5.5 -> 5.5.5.5 default/svc");
    }

    @Test
    void fqdnSlicesMalformedAddressesAndFamilyMismatchesAreRefused() {
      Fixture f = withSvc1(ovnCluster(), "", NODE)
          .slice("service1", "service1-v4", "IPv4", ep("10.128.0.3", NODE), ep("10.128.0.300", NODE),
              ep("fd00::1", NODE), ep("10.128.0.0/24", NODE))
          .slice("service1", "service1-fqdn", "FQDN", ep("db.example.com", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/service1");
      assertThat(skipped(s, "service1")).containsExactly(
          "EndpointSlice default/service1-fqdn: addressType FQDN is not supported: only IPv4 and IPv6 endpoints are handled",
          "10.128.0.300: not a valid IP address",
          "fd00::1: an V6 address in an IPv4 EndpointSlice (default/service1-v4)",
          "10.128.0.0/24: not a valid IP address");
    }

    @Test
    void malformedClusterIpIsReportedAndHeadlessIsIgnored() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE).lbService("service1", List.of("10.129.0.2.1"), "5.5.5.5");

      DesiredState s = f.plan(NODE);

      assertThat(sourceRules(s)).containsExactly("5000: from 10.128.0.3 lookup 100 default/service1");
      assertThat(skipped(s, "service1")).contains("10.129.0.2.1: ClusterIP is not a valid IP address");
    }

    @Test
    void duplicateEndpointAcrossSlicesOfOneServiceGivesOneEntry() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE)
          .slice("service1", "service1-old", "IPv4", ep("10.128.0.3", NODE));

      assertThat(snat(f.plan(NODE))).containsExactly("10.128.0.3 -> 5.5.5.5 default/service1");
    }
  }

  @Nested
  class Networks {
    @Test
    void numericNetworkIsTheTableId() {
      RuleSpec r = withSvc1(ovnCluster(), "4000000000", NODE).plan(NODE).rules().stream()
          .filter(x -> x.service().isPresent()).findFirst().orElseThrow();

      assertThat(r.table().id()).hasValue(4_000_000_000L);
    }

    @Test
    void namedNetworkResolvedOnTheNodeUsesItsTable() {
      DesiredState s = withSvc1(ovnCluster(), "blue", NODE).networkName("blue", 1001).plan(NODE);

      assertThat(s.rules()).filteredOn(r -> r.service().isPresent())
          .allSatisfy(r -> assertThat(r.table().id()).hasValue(1001));
    }

    @Test
    void namedNetworkStaysUnresolvedOfflineAndIsReportedAsSuch() {
      DesiredState s = withSvc1(ovnCluster(), "blue", NODE).offline().plan(NODE);

      assertThat(sourceRules(s)).contains("5000: from 10.128.0.3 lookup blue default/service1");
      assertThat(s.rules()).filteredOn(r -> r.service().isPresent()).allMatch(r -> !r.table().resolved());
      assertThat(outcome(s, "service1").reason()).contains("(a name: resolved on each node)");
    }

    @Test
    void unresolvableNetworkFailsOnlyItsOwnServiceAndAppliesNothingOfIt() {
      Fixture f = withSvc1(ovnCluster(), "red", NODE)
          .networkFailure("red", "network 'red' not found on this node")
          .egress("service2", LOAD_BALANCER_IP, "100", NODE)
          .lbService("service2", List.of("10.129.0.10"), "5.5.5.6")
          .slice("service2", "service2-v4", "IPv4", ep("10.128.0.11", NODE));

      DesiredState s = f.plan(NODE);

      assertThat(outcome(s, "service1").configured()).isFalse();
      assertThat(outcome(s, "service1").reason()).isEqualTo("network 'red' not found on this node");
      assertThat(snat(s)).containsExactly("10.128.0.11 -> 5.5.5.6 default/service2");
      assertThat(sourceRules(s)).allMatch(r -> r.endsWith("default/service2"));
    }

    @Test
    void anUnknownNameOnANodeIsAFailureNotARuleIntoTableZero() {
      DesiredState s = withSvc1(ovnCluster(), "green", NODE).plan(NODE);

      assertThat(s.rules()).isEmpty();
      assertThat(outcome(s, "service1").reason()).startsWith("network 'green' not found on this node");
    }

    @Test
    void tableZeroAndTheLocalTableAreRefused() {
      assertThat(outcome(withSvc1(ovnCluster(), "0", NODE).plan(NODE), "service1").reason())
          .contains("'unspec' table");
      assertThat(outcome(withSvc1(ovnCluster(), "255", NODE).plan(NODE), "service1").reason())
          .contains("'local' table");
      assertThat(outcome(withSvc1(ovnCluster(), "4294967296", NODE).plan(NODE), "service1").reason())
          .startsWith(NetworkNames.INVALID).contains("above the largest table number allowed, 4294967294");
    }
  }

  @Nested
  class InCluster {
    @Test
    void podCidrsOfAllNodesAreAggregatedIntoFewRoutes() {
      Fixture f = Fixture.cluster()
          .node(NODE, List.of("192.168.18.15"), "10.128.0.0/24")
          .node("n2", List.of("192.168.18.16"), "10.128.1.0/24")
          .node("n3", List.of("192.168.18.17"), "10.128.2.0/24")
          .node("n4", List.of("192.168.18.18"), "10.128.3.0/24");
      DesiredState s = withSvc1(f, "100", NODE).slice("service1", "service1-v4", "IPv4", ep("10.128.0.3", NODE))
          .plan(NODE);

      assertThat(throwRoutes(s)).filteredOn(r -> r.startsWith("throw 10.")).containsExactly("throw 10.128.0.0/22 table 100");
    }

    @Test
    void nodeAddressesAreExactInTheSnatSetAndTheRoutesNotTheirSubnet() {
      DesiredState s = withSvc1(ovnCluster(), "100", NODE).localAddresses("192.168.18.15").plan(NODE);

      assertThat(s.inCluster()).extracting(Object::toString).contains("192.168.18.15", "192.168.18.16")
          .doesNotContain("192.168.18.0/24");
      assertThat(throwRoutes(s)).contains("throw 192.168.18.15/32 table 100", "throw 192.168.18.16/32 table 100")
          .noneMatch(r -> r.contains("192.168.18.0/24"));
    }

    @Test
    void addressesSeenOnTheNodeButNotInItsNodeObjectAreInClusterDestinationsExactly() {
      DesiredState s = withSvc1(ovnCluster(), "100", NODE)
          .localAddresses("192.168.18.15", "10.89.0.7", "fd00:89::7", "127.0.0.1", "::1", "fe80::1").plan(NODE);

      assertThat(s.inCluster()).extracting(Object::toString).contains("10.89.0.7", "fd00:89::7")
          .doesNotContain("127.0.0.1", "::1", "fe80::1");
      // Routes only in the families the table has rules for (IPv4 here).
      assertThat(throwRoutes(s)).contains("throw 10.89.0.7/32 table 100").noneMatch(r -> r.contains("fd00:89::7"));
    }

    @Test
    void excludeCidrsJoinTheInClusterDestinations() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE);
      f.config(f.inputs(NODE).config().withCidrs(List.of(IpPrefix.parse("10.128.0.0/16")),
          List.of(IpPrefix.parse("10.129.0.0/16")), List.of(IpPrefix.parse("169.254.169.0/29"))));

      DesiredState s = f.plan(NODE);

      assertThat(throwRoutes(s)).contains("throw 169.254.169.0/29 table 100");
      assertThat(s.inCluster()).extracting(Object::toString).contains("169.254.169.0/29");
    }

    @Test
    void noThrowRoutesWhileNoServiceHasANetworkButTheSnatSetIsKept() {
      DesiredState s = withSvc1(ovnCluster(), "", NODE).plan(NODE);

      assertThat(s.routes()).isEmpty();
      assertThat(s.inCluster()).isNotEmpty();
    }

    @Test
    void throwRoutesOnlyForFamiliesThatHaveServiceRules() {
      Fixture f = ovnCluster().config(PlanConfig.defaults().withCidrs(
          List.of(IpPrefix.parse("10.128.0.0/16"), IpPrefix.parse("fd00:10:128::/48")), List.of(), List.of()));
      DesiredState s = withSvc1(f, "100", NODE).plan(NODE);

      assertThat(throwRoutes(s)).containsExactly("throw 10.128.0.0/16 table 100", "throw 192.168.18.15/32 table 100",
          "throw 192.168.18.16/32 table 100");
    }

    @Test
    void everyTableWithRulesGetsTheSameThrowRoutes() {
      DesiredState s = withSvc1(ovnCluster(), "100", NODE)
          .egress("service2", NETWORK, "101", "ALL").lbService("service2", List.of(), "5.5.5.6")
          .slice("service2", "s2", "IPv4", ep("10.128.0.11", NODE)).plan(NODE);

      assertThat(throwRoutes(s)).containsExactly(
          "throw 10.128.0.0/15 table 100", "throw 192.168.18.15/32 table 100", "throw 192.168.18.16/32 table 100",
          "throw 10.128.0.0/15 table 101", "throw 192.168.18.15/32 table 101", "throw 192.168.18.16/32 table 101");
    }

    @Test
    void noInClusterExclusionTurnsBothOff() {
      DesiredState s = withSvc1(ovnCluster(), "100", NODE).noInClusterExclusion().plan(NODE);

      assertThat(s.routes()).isEmpty();
      assertThat(s.inCluster()).isEmpty();
      assertThat(sourceRules(s)).hasSize(2);
    }

    @Test
    void ruleCountStaysProportionalToEndpointsAndRouteCountToPrefixesAndNodes() {
      Fixture f = Fixture.cluster().config(PlanConfig.defaults().withCidrs(
          List.of(IpPrefix.parse("10.128.0.0/14")), List.of(IpPrefix.parse("172.30.0.0/16")), List.of()));
      List<EndpointSliceInfo.Endpoint> eps = new ArrayList<>();
      for (int n = 0; n < 200; n++) {
        f.node("n" + n, List.of("192.168.18." + (n + 1)), "10.128." + n + ".0/24");
        eps.add(ep("10.128." + n + ".10", "n" + n));
      }
      f.egress("svc", LOAD_BALANCER_IP, "100", "n0").lbService("svc", List.of("172.30.0.5"), "5.5.5.5")
          .slice("svc", "s", "IPv4", eps.toArray(EndpointSliceInfo.Endpoint[]::new));

      DesiredState s = f.plan("n0");

      assertThat(inClusterRules(s)).isEmpty();
      assertThat(sourceRules(s)).hasSize(201);
      // 2 prefixes + 200 Node addresses (192.168.18.1-200 aggregate to 10 prefixes) in one table.
      assertThat(throwRoutes(s)).contains("throw 10.128.0.0/14 table 100", "throw 172.30.0.0/16 table 100",
          "throw 192.168.18.1/32 table 100", "throw 192.168.18.128/26 table 100").hasSize(12);
    }
  }

  @Nested
  class NodeOwnAddressesAndWholeFamilyPrefixes {
    /** No pod CIDRs known anywhere: Nodes without spec.podCIDRs and no --cluster-cidr. */
    Fixture withoutPodCidrs() {
      return Fixture.cluster()
          .node(NODE, List.of("192.168.18.15"))
          .node("other", List.of("192.168.18.16"))
          .egress("svc", LOAD_BALANCER_IP, "100", NODE).lbService("svc", List.of(), "5.5.5.5");
    }

    @Test
    void theNodesUplinkAddressListedInASliceIsRefusedWhenPodCidrsAreUnknown() {
      DesiredState s = withoutPodCidrs()
          .slice("svc", "s", "IPv4", ep("10.128.0.3", NODE), ep("172.16.1.1", NODE), ep("fd00:16::1", NODE))
          .slice("svc", "s6", "IPv6", ep("fd00:16::1", NODE))
          .localAddresses("192.168.18.15", "172.16.1.1", "fd00:16::1", "127.0.0.1")
          .plan(NODE);

      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/svc");
      assertThat(sourceRules(s)).containsExactly("5000: from 10.128.0.3 lookup 100 default/svc");
      assertThat(outcome(s, "svc").skippedEndpoints())
          .filteredOn(e -> e.address().equals("172.16.1.1") || e.address().equals("fd00:16::1"))
          .extracting(ServiceOutcome.SkippedEndpoint::reason)
          .contains("an address of this node (on its interfaces, not in its Node object): the node's own traffic is never"
              + " changed");
      assertThat(outcome(s, "svc").skippedEndpoints()).extracting(ServiceOutcome.SkippedEndpoint::address)
          .contains("172.16.1.1", "fd00:16::1");
    }

    @Test
    void aNodePodCidrCoveringAWholeFamilyIsRefusedAndReportedNotMadeAnInClusterDestination() {
      DesiredState s = Fixture.cluster()
          .node(NODE, List.of("192.168.18.15"), "10.128.0.0/24")
          .node("bad", List.of("192.168.18.16"), "0.0.0.0/0", "::/0")
          .egress("svc", LOAD_BALANCER_IP, "100", NODE).lbService("svc", List.of(), "5.5.5.5")
          .slice("svc", "s", "IPv4", ep("10.128.0.3", NODE), ep("192.168.18.99", NODE))
          .plan(NODE);

      assertThat(s.inCluster()).extracting(Object::toString)
          .containsExactly("10.128.0.0/24", "192.168.18.15", "192.168.18.16");
      assertThat(throwRoutes(s)).noneMatch(r -> r.contains("/0 "));
      assertThat(s.refusedInputs()).containsExactly(
          "Node bad pod CIDR 0.0.0.0/0 covers every IPv4 address: ignored (as an in-cluster destination it would"
              + " exempt all egress from every service)",
          "Node bad pod CIDR ::/0 covers every IPv6 address: ignored (as an in-cluster destination it would"
              + " exempt all egress from every service)");
      // The pod networks are this node's 10.128.0.0/24 only: a host-network address stays refused.
      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/svc");
    }

    @Test
    void aWholeFamilyClusterCidrFlagIsRefusedAndReportedNotMadeAnInClusterDestination() {
      DesiredState s = withoutPodCidrs().config(PlanConfig.defaults().withCidrs(
              List.of(IpPrefix.parse("0.0.0.0/0")), List.of(), List.of()))
          .slice("svc", "s", "IPv4", ep("10.128.0.3", NODE)).plan(NODE);

      assertThat(s.inCluster()).extracting(Object::toString).containsExactly("192.168.18.15", "192.168.18.16");
      assertThat(s.refusedInputs()).singleElement().asString().startsWith("--cluster-cidr 0.0.0.0/0 covers every IPv4");
    }
  }

  @Nested
  class MarkMode {
    Fixture marked(Fixture f) {
      PlanConfig c = f.inputs(NODE).config();
      return f.config(c.withRuleMode(RuleMode.MARK, PlanConfig.DEFAULT_MARK_MASK));
    }

    Fixture twoNetworks() {
      return withSvc1(ovnCluster(), "100", NODE)
          .egress("service2", NETWORK, "101", "ALL").lbService("service2", List.of("10.129.0.10"), "5.5.5.6")
          .slice("service2", "s2", "IPv4", ep("10.128.0.11", NODE), ep("10.128.0.12", NODE));
    }

    @Test
    void eachNetworkGetsOneFwmarkRuleAndEverySourceAMarkEntry() {
      DesiredState s = marked(twoNetworks()).plan(NODE);

      assertThat(s.rules()).filteredOn(r -> r.priority() == 5000)
          .extracting(r -> r.table().name() + " fwmark 0x" + Long.toHexString(r.fwmark().orElseThrow())
              + " from " + r.from().map(Object::toString).orElse("all"))
          .containsExactly("100 fwmark 0x1000000 from all", "101 fwmark 0x2000000 from all");
      assertThat(s.marks()).extracting(m -> m.source() + " -> " + m.table() + " " + m.service()).containsExactly(
          "10.128.0.3 -> 100 default/service1", "10.128.0.11 -> 101 default/service2",
          "10.128.0.12 -> 101 default/service2", "10.129.0.2 -> 100 default/service1",
          "10.129.0.10 -> 101 default/service2");
      assertThat(snat(s)).containsExactly("10.128.0.3 -> 5.5.5.5 default/service1");
      assertThat(s.networkMarks()).containsEntry(100L, 0x1000000L).containsEntry(101L, 0x2000000L);
    }

    @Test
    void inClusterDestinationsAreThrownBackFromEachNetworksTableAsInSourceMode() {
      DesiredState s = marked(twoNetworks()).plan(NODE);

      assertThat(s.rules()).noneMatch(r -> r.priority() == 4999);
      assertThat(throwRoutes(s)).containsExactly(
          "throw 10.128.0.0/15 table 100", "throw 192.168.18.15/32 table 100", "throw 192.168.18.16/32 table 100",
          "throw 10.128.0.0/15 table 101", "throw 192.168.18.15/32 table 101", "throw 192.168.18.16/32 table 101");
    }

    @Test
    void marksTheKernelAlreadyUsesAreKeptSoTheyStayStableAcrossRestarts() {
      Fixture f = marked(twoNetworks());
      NodeInputs in = f.inputs(NODE);
      NodeInputs withExisting = new NodeInputs(in.nodeName(), in.egressServices(), in.services(), in.endpointSlices(),
          in.nodes(), in.localAddresses(), in.networks(), in.config(), java.util.Map.of(101L, 0x1000000L));

      DesiredState s = Planner.plan(withExisting);

      assertThat(s.networkMarks()).containsEntry(101L, 0x1000000L).containsEntry(100L, 0x2000000L);
    }

    @Test
    void whenTheMaskHasNoFreeValueTheServiceIsNotConfiguredAndSaysWhy() {
      Fixture f = twoNetworks();
      f.config(f.inputs(NODE).config().withRuleMode(RuleMode.MARK, 0x1000000L));

      DesiredState s = f.plan(NODE);

      assertThat(s.networkMarks()).hasSize(1);
      assertThat(s.services()).filteredOn(o -> !o.configured()).singleElement()
          .satisfies(o -> assertThat(o.reason()).startsWith("no free mark for table"));
    }

    @Test
    void sourceModeHasNoMarks() {
      DesiredState s = twoNetworks().plan(NODE);

      assertThat(s.marks()).isEmpty();
      assertThat(s.rules()).allMatch(r -> r.fwmark().isEmpty());
    }

    @Test
    void aNonContiguousMaskIsRefused() {
      assertThatThrownBy(() -> PlanConfig.defaults().withRuleMode(RuleMode.MARK, 0x0f0f0000L))
          .hasMessageContaining("contiguous");
    }
  }

  @Nested
  class Determinism {
    @Test
    void shuffledInputsGiveTheSameSortedOutput() {
      Fixture f = withSvc1(ovnCluster(), "100", NODE)
          .egress("service2", NETWORK, "101", "ALL").lbService("service2", List.of("10.129.0.10"), "5.5.5.6")
          .slice("service2", "s2", "IPv4", ep("10.128.0.11", NODE), ep("10.128.0.2", NODE));
      NodeInputs in = f.inputs(NODE);
      DesiredState expected = Planner.plan(in);

      Random random = new Random(42);
      for (int i = 0; i < 20; i++) {
        NodeInputs shuffled = new NodeInputs(in.nodeName(), shuffle(in.egressServices(), random),
            shuffle(in.services(), random), shuffle(in.endpointSlices(), random), shuffle(in.nodes(), random),
            in.localAddresses(), in.networks(), in.config());
        assertThat(Planner.plan(shuffled)).isEqualTo(expected);
      }
      assertThat(expected.rules()).isSortedAccordingTo(RuleSpec.ORDER);
    }

    @Test
    void ruleOrderIsFamilyPriorityFromToMarkTable() {
      java.util.Comparator<RuleSpec> reference = java.util.Comparator.comparing(RuleSpec::family)
          .thenComparingInt(RuleSpec::priority)
          .thenComparing(r -> r.from().orElse(null), java.util.Comparator.nullsFirst(java.util.Comparator.naturalOrder()))
          .thenComparing(r -> r.to().orElse(null), java.util.Comparator.nullsFirst(java.util.Comparator.naturalOrder()))
          .thenComparingLong(r -> r.fwmark().orElse(0))
          .thenComparing(r -> r.table().name());
      Random random = new Random(11);
      List<RuleSpec> rules = new ArrayList<>();
      String[] v4 = {"10.128.0.1", "10.128.0.2", "10.0.0.0/8", "172.30.0.0/16"};
      String[] v6 = {"fd00::1", "fd00::2", "fd00::/48"};
      for (int i = 0; i < 300; i++) {
        boolean six = random.nextBoolean();
        String[] pool = six ? v6 : v4;
        Optional<IpPrefix> from = random.nextBoolean() ? Optional.of(IpPrefix.parse(pool[random.nextInt(pool.length)]))
            : Optional.empty();
        Optional<IpPrefix> to = random.nextBoolean() ? Optional.of(IpPrefix.parse(pool[random.nextInt(pool.length)]))
            : Optional.empty();
        java.util.OptionalLong mark = random.nextBoolean() ? java.util.OptionalLong.of(random.nextInt(3))
            : java.util.OptionalLong.empty();
        rules.add(new RuleSpec(six ? io.egressservice.ip.IpFamily.V6 : io.egressservice.ip.IpFamily.V4,
            4999 + random.nextInt(2), from, to, TableRef.of(100 + random.nextInt(2)), Optional.empty(), mark));
      }
      for (RuleSpec a : rules) {
        for (RuleSpec b : rules) {
          assertThat(Integer.signum(RuleSpec.ORDER.compare(a, b))).as("%s vs %s", a, b)
              .isEqualTo(Integer.signum(reference.compare(a, b)));
        }
      }
    }

    private <T> List<T> shuffle(List<T> in, Random random) {
      List<T> copy = new ArrayList<>(in);
      Collections.shuffle(copy, random);
      return copy;
    }

    @Test
    void configRefusesPrioritiesWithoutRoomForTheInClusterRules() {
      assertThatThrownBy(() -> new PlanConfig(1, 201, List.of(), List.of(), List.of(), true))
          .hasMessageContaining("priority must be between 2 and 32765");
      assertThatThrownBy(() -> new PlanConfig(32766, 201, List.of(), List.of(), List.of(), true))
          .isInstanceOf(IllegalArgumentException.class);
      assertThatThrownBy(() -> new PlanConfig(5000, 0, List.of(), List.of(), List.of(), true))
          .hasMessageContaining("rule protocol");
    }
  }
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.model.SteeringConfig;
import io.egressservice.model.RemoteEndpoints;
import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.skipped;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.Fixture.sourceRules;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static io.egressservice.plan.SourceIpBy.NETWORK;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Steering in the plan (DESIGN.md section 6): a node that is not {@code status.host}
 * sends its local endpoints of a LoadBalancerIP service to the host's InternalIP of the family, through
 * one steering table per host; the host counts them as arriving, not as remote.
 */
class SteeringPlannerTest {
  static final String A = "node-a";
  static final String B = "node-b";
  static final String C = "node-c";

  /** node-a (host) and node-b dual stack, node-c IPv4 only; web has endpoints on all three. */
  static Fixture cluster(String host) {
    return Fixture.cluster()
        .internalNode(A, List.of("192.168.1.10", "fd00::a"), "10.128.0.0/24", "fd10:128::/64")
        .internalNode(B, List.of("192.168.1.11", "fd00::b"), "10.128.1.0/24", "fd10:128:1::/64")
        .internalNode(C, List.of("192.168.1.12"), "10.128.2.0/24", "fd10:128:2::/64")
        .config(PlanConfig.defaults().withCidrs(List.of(), List.of(IpPrefix.parse("172.30.0.0/16")), List.of()))
        .egress("web", LOAD_BALANCER_IP, "", host)
        .lbService("web", List.of("172.30.0.10", "fd02::10"), "5.5.5.5", "2001:db8:5::5")
        .slice("web", "web-v4", "IPv4", ep("10.128.0.5", A), ep("10.128.1.5", B), ep("10.128.2.5", C))
        .slice("web", "web-v6", "IPv6", ep("fd10:128::5", A), ep("fd10:128:1::5", B), ep("fd10:128:2::5", C));
  }

  static List<String> steering(DesiredState s) {
    return s.steering().endpoints().stream()
        .map(e -> e.source() + " -> " + e.host() + " " + e.hostAddress() + " table " + e.table()).toList();
  }

  static List<String> routes(DesiredState s) {
    return s.steering().routes().stream()
        .map(r -> r.family() + " table " + r.table() + " -> " + r.host() + " " + r.hostAddress()).toList();
  }

  @Test
  void aNodeThatIsNotTheHostSteersItsOwnEndpointsToTheHostsInternalIpOfEachFamily() {
    DesiredState s = cluster(A).plan(B);

    assertThat(steering(s)).containsExactly(
        "10.128.1.5 -> node-a 192.168.1.10 table 7000",
        "fd10:128:1::5 -> node-a fd00::a table 7000");
    assertThat(routes(s)).containsExactly("V4 table 7000 -> node-a 192.168.1.10", "V6 table 7000 -> node-a fd00::a");
    assertThat(sourceRules(s)).containsExactly(
        "5000: from 10.128.1.5 lookup 7000 default/web", "5000: from fd10:128:1::5 lookup 7000 default/web");
    assertThat(snat(s)).as("only the host SNATs").isEmpty();
    assertThat(Fixture.throwRoutes(s)).as("in-cluster traffic of steered pods is thrown back to the main table")
        .contains("throw 10.128.0.0/23 table 7000", "throw 10.128.2.0/24 table 7000", "throw 172.30.0.0/16 table 7000",
            "throw 192.168.1.10/31 table 7000");
    ServiceOutcome o = outcome(s, "web");
    assertThat(o.configured()).isTrue();
    assertThat(o.reason()).isEqualTo("steers 2 endpoint(s) of this node to host node-a (192.168.1.10, fd00::a) over"
        + " egress-vx: they leave there with 5.5.5.5, 2001:db8:5::5");
    assertThat(o.steeredEndpoints()).hasSize(2);
    assertThat(o.remoteEndpoints()).isEmpty();
    assertThat(s.steering().deviceWanted()).isTrue();
    assertThat(s.steering().receives()).isFalse();
  }

  @Test
  void theHostSnatsEveryEndpointAndCountsTheSteeredOnesAsArrivingNotRemote() {
    DesiredState s = cluster(A).plan(A);

    assertThat(snat(s)).hasSize(6);
    ServiceOutcome o = outcome(s, "web");
    assertThat(o.steeredIn()).containsExactlyInAnyOrder("10.128.1.5", "fd10:128:1::5", "10.128.2.5", "fd10:128:2::5");
    assertThat(o.remoteEndpoints()).isEmpty();
    assertThat(o.reason()).contains("(4 endpoint(s) on other nodes arrive steered over egress-vx)");
    assertThat(s.steering().endpoints()).isEmpty();
    assertThat(s.steering().routes()).isEmpty();
    assertThat(s.steering().receives()).as("the host needs the device to receive").isTrue();
  }

  /** The steering port of the host accepts each steered endpoint from its own Node's InternalIP, no other. */
  @Test
  void theHostAcceptsASteeredEndpointOnlyFromTheNodeItLivesOn() {
    DesiredState s = cluster(A).plan(A);

    assertThat(senders(outcome(s, "web"))).containsExactly(
        "10.128.1.5 from 192.168.1.11", "10.128.2.5 from 192.168.1.12", "fd10:128:1::5 from fd00::b");
  }

  /** Endpoints without a nodeName: the Node whose pod CIDR holds them sends them. */
  @Test
  void anEndpointWithoutNodeNameIsAcceptedFromTheNodeOfItsPodCidr() {
    Fixture f = cluster(A).slice("web", "web-v4", "IPv4", ep("10.128.1.7", null), ep("10.128.2.7", null))
        .slice("web", "web-v6", "IPv6");

    assertThat(senders(outcome(f.plan(A), "web"))).containsExactly(
        "10.128.1.7 from 192.168.1.11", "10.128.2.7 from 192.168.1.12");
  }

  /**
   * The LB IP as inner source only while a planned move is under way, and only from the other receiving node: the
   * old host's own pod's flow, SNATed there before the move, arrives with it until the old host restarts the flow.
   */
  @Test
  void theLbIpIsAcceptedAsInnerSourceOnlyFromTheOtherReceivingNodeOfAPlannedMove() {
    assertThat(senders(outcome(cluster(A).plan(A), "web"))).as("no move: no Node sends the LB IP")
        .noneMatch(p -> p.contains("(planned move)"));

    Fixture moving = cluster(A).egress(new EgressServiceInfo(new ObjectRef(Fixture.NS, "web"), java.util.Optional.empty(),
        LOAD_BALANCER_IP, "", A, java.util.Optional.empty(), A + "," + B));
    assertThat(senders(outcome(moving.plan(A), "web"))).as("the old host node-a, node-b receiving too").contains(
        "5.5.5.5 from 192.168.1.11 (planned move)", "2001:db8:5::5 from fd00::b (planned move)")
        .noneMatch(p -> p.contains("from 192.168.1.12 (planned move)"));
    assertThat(senders(outcome(moving.plan(B), "web"))).as("on the new host node-b: from the old host node-a")
        .contains("5.5.5.5 from 192.168.1.10 (planned move)", "2001:db8:5::5 from fd00::a (planned move)",
            "10.128.0.5 from 192.168.1.10")
        .noneMatch(p -> p.contains("from 192.168.1.12 (planned move)"));
  }

  static List<String> senders(ServiceOutcome o) {
    return o.tunnelSenders().stream().map(TunnelSender::toString).toList();
  }

  @Test
  void aHostWithoutAnIpv6InternalIpGetsTheIpv4EndpointsAndTheIpv6OnesAreReportedNeverGuessed() {
    DesiredState onA = cluster(C).plan(A);
    assertThat(steering(onA)).containsExactly("10.128.0.5 -> node-c 192.168.1.12 table 7000");
    assertThat(skipped(onA, "web")).containsExactly(
        "fd10:128::5: host node-c has no IPv6 InternalIP: not steered (never guessed)");
    assertThat(outcome(onA, "web").reason())
        .endsWith("; 1 endpoint(s) not steered: host node-c has no IPv6 InternalIP");
    assertThat(routes(onA)).containsExactly("V4 table 7000 -> node-c 192.168.1.12");

    // and the host itself reports the IPv6 endpoints of other nodes as not steered to it
    DesiredState onC = cluster(C).plan(C);
    assertThat(outcome(onC, "web").remoteEndpoints()).containsExactlyInAnyOrder("fd10:128::5", "fd10:128:1::5");
    assertThat(outcome(onC, "web").steeredIn()).containsExactlyInAnyOrder("10.128.0.5", "10.128.1.5");
  }

  @Test
  void onlyAnUnsteerableFamilyIsANodeLocalProblemWithItsOwnReason() {
    Fixture f = cluster(C).slice("web", "web-v4", "IPv4", ep("10.128.2.5", C));
    DesiredState s = f.plan(A);
    assertThat(s.steering().endpoints()).isEmpty();
    assertThat(outcome(s, "web").configured()).isFalse();
    assertThat(outcome(s, "web").reason()).isEqualTo("not steered to host node-c: host node-c has no IPv6 InternalIP");
    assertThat(s.steering().deviceWanted()).isFalse();
  }

  @Test
  void aHostThatIsNotAKnownNodeIsReported() {
    DesiredState s = cluster("node-x").plan(B);
    assertThat(s.steering().endpoints()).isEmpty();
    assertThat(outcome(s, "web").reason()).isEqualTo("not steered to host node-x: host node-x is not a known Node");
    assertThat(skipped(s, "web")).contains("10.128.1.5: host node-x is not a known Node: not steered (never guessed)");
  }

  @Test
  void withRemoteEndpointsReportNothingIsSteeredAndTheHostReportsThemAsBefore() {
    Fixture f = cluster(A);
    f.config(PlanConfig.defaults().withSteering(
        new SteeringConfig(RemoteEndpoints.REPORT, SteeringConfig.DEFAULT_FIRST_TABLE, SteeringConfig.DEFAULT_PORT)));
    DesiredState onB = f.plan(B);
    assertThat(onB.rules()).isEmpty();
    assertThat(onB.steering().deviceWanted()).isFalse();
    assertThat(outcome(onB, "web").reason()).isEqualTo("handled by node node-a (status.host)");
    DesiredState onA = f.plan(A);
    assertThat(outcome(onA, "web").remoteEndpoints()).hasSize(4);
    assertThat(outcome(onA, "web").steeredIn()).isEmpty();
    assertThat(onA.steering().receives()).isFalse();
  }

  @Test
  void aNodeWithoutLocalEndpointsOfTheServiceSteersNothingAndNeedsNoDevice() {
    Fixture f = cluster(A).slice("web", "web-v4", "IPv4", ep("10.128.0.5", A))
        .slice("web", "web-v6", "IPv6", ep("fd10:128::5", A));
    DesiredState s = f.plan(B);
    assertThat(s.rules()).isEmpty();
    assertThat(s.steering().deviceWanted()).isFalse();
    assertThat(outcome(s, "web").reason()).isEqualTo("handled by node node-a (status.host)");
    assertThat(f.plan(A).steering().receives()).as("nothing arrives: no device on the host either").isFalse();
  }

  @Test
  void endpointsWithoutNodeNameAreSteeredOnlyWhereThePodCidrSaysTheyAre() {
    Fixture f = cluster(A).slice("web", "web-v4", "IPv4", ep("10.128.1.7", null), ep("10.128.2.7", null))
        .slice("web", "web-v6", "IPv6");
    assertThat(steering(f.plan(B))).containsExactly("10.128.1.7 -> node-a 192.168.1.10 table 7000");
    assertThat(steering(f.plan(C))).containsExactly("10.128.2.7 -> node-a 192.168.1.10 table 7000");
  }

  @Test
  void aFamilyWithoutLoadBalancerIpIsSteeredOnlyWhenTheHostRoutesItThroughANetwork() {
    Fixture f = cluster(A).lbService("web", List.of("172.30.0.10"), "5.5.5.5");
    DesiredState s = f.plan(B);
    assertThat(steering(s)).containsExactly("10.128.1.5 -> node-a 192.168.1.10 table 7000");
    assertThat(skipped(s, "web")).containsExactly("fd10:128:1::5: the Service has no IPv6 LoadBalancer ingress IP"
        + " and no network: not steered to host node-a (it would do nothing for it)");

    // with a network the host routes the IPv6 endpoints through it (no SNAT), so they go there too
    DesiredState withNetwork = f.egress("web", LOAD_BALANCER_IP, "100", A).plan(B);
    assertThat(steering(withNetwork)).containsExactly(
        "10.128.1.5 -> node-a 192.168.1.10 table 7000", "fd10:128:1::5 -> node-a fd00::a table 7000");
  }

  @Test
  void eachHostHasOneTableKeptAcrossRestartsAndServices() {
    Fixture f = cluster(A)
        .egress("db", LOAD_BALANCER_IP, "", C)
        .lbService("db", List.of("172.30.0.11"), "5.5.5.6")
        .slice("db", "db-v4", "IPv4", ep("10.128.1.9", B));
    DesiredState fresh = f.plan(B); // services in order (oldest, then by name): db's host first
    assertThat(routes(fresh)).containsExactly(
        "V4 table 7000 -> node-c 192.168.1.12", "V4 table 7001 -> node-a 192.168.1.10", "V6 table 7001 -> node-a fd00::a");

    // The kernel says node-c has 7000 and node-a 7003: both keep theirs.
    Map<Long, Set<IpPrefix>> existing = new HashMap<>();
    existing.put(7000L, Set.of(IpPrefix.parse("192.168.1.12")));
    existing.put(7003L, Set.of(IpPrefix.parse("192.168.1.10"), IpPrefix.parse("fd00::a")));
    DesiredState kept = f.existingSteerTables(existing).plan(B);
    assertThat(routes(kept)).containsExactly(
        "V4 table 7000 -> node-c 192.168.1.12", "V4 table 7003 -> node-a 192.168.1.10", "V6 table 7003 -> node-a fd00::a");
    assertThat(sourceRules(kept)).contains("5000: from 10.128.1.9 lookup 7000 default/db",
        "5000: from 10.128.1.5 lookup 7003 default/web");

    // A table whose host changed its address is not reused by it; a new one is taken, the old one freed.
    existing.put(7003L, Set.of(IpPrefix.parse("192.168.1.99")));
    assertThat(routes(f.existingSteerTables(existing).plan(B))).contains("V4 table 7001 -> node-a 192.168.1.10");
  }

  @Test
  void whenEverySteeringTableIsTakenTheEndpointIsReported() {
    Map<Long, Set<IpPrefix>> existing = new HashMap<>();
    for (long t = 7000; t < 7000 + SteeringConfig.TABLES; t++) {
      existing.put(t, Set.of(IpPrefix.parse("10.99.0." + (t % 250))));
    }
    DesiredState s = cluster(A).existingSteerTables(existing).plan(B);
    assertThat(s.steering().endpoints()).isEmpty();
    assertThat(outcome(s, "web").reason()).startsWith("not steered to host node-a: no free steering table (256 from"
        + " --steer-table 7000 are in use)");
  }

  @Test
  void inMarkModeSteeredSourcesAreMarkedAndEachHostsTableIsANetworkWithItsMark() {
    Fixture f = cluster(A);
    f.config(PlanConfig.defaults().withRuleMode(RuleMode.MARK, PlanConfig.DEFAULT_MARK_MASK));
    DesiredState s = f.plan(B);
    assertThat(s.marks()).extracting(m -> m.source() + " -> " + m.table())
        .containsExactly("10.128.1.5 -> 7000", "fd10:128:1::5 -> 7000");
    assertThat(s.networkMarks()).containsOnlyKeys(7000L);
    assertThat(s.rules()).filteredOn(r -> r.priority() == 5000)
        .allSatisfy(r -> assertThat(r.fwmark()).isPresent()).allSatisfy(r -> assertThat(r.from()).isEmpty());
    assertThat(steering(s)).hasSize(2);
  }

  @Test
  void networkModeServicesAreNeverSteered() {
    Fixture f = cluster("ALL").egress("web", NETWORK, "100", "ALL");
    DesiredState s = f.plan(B);
    assertThat(s.steering().endpoints()).isEmpty();
    assertThat(sourceRules(s)).contains("5000: from 10.128.1.5 lookup 100 default/web");
  }

  @Test
  void hostChangeMovesTheSteering() {
    assertThat(steering(cluster(A).plan(B))).allMatch(l -> l.contains("node-a"));
    DesiredState afterMove = cluster(C).plan(B);
    assertThat(steering(afterMove)).containsExactly("10.128.1.5 -> node-c 192.168.1.12 table 7000");
    assertThat(cluster(B).plan(B).steering().endpoints()).as("the new host steers nothing").isEmpty();
    assertThat(steering(cluster(B).plan(A))).containsExactly(
        "10.128.0.5 -> node-b 192.168.1.11 table 7000", "fd10:128::5 -> node-b fd00::b table 7000");
  }
}

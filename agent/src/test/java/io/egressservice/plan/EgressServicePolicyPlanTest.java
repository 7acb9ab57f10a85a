package io.egressservice.plan;

import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.Fixture.sourceRules;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static io.egressservice.plan.SourceIpBy.NETWORK;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The EgressServicePolicy in the plan: with {@code --egress-service-policy=enforce} a service is configured only if
 * one grant that selects its namespace allows its network and (LoadBalancerIP mode) its LoadBalancer IPs; it is
 * refused alone, on every node, with a reason naming the namespace, the network or address and what would grant it.
 */
class EgressServicePolicyPlanTest {
  static final String A = "node-a";
  static final String B = "node-b";

  /** Namespace shop (team=shop) and namespace other, each with a LoadBalancerIP service on network 1337 hosted on A. */
  static Fixture twoTenants(String network) {
    return Fixture.cluster()
        .internalNode(A, List.of("192.168.1.10"), "10.128.0.0/24")
        .internalNode(B, List.of("192.168.1.11"), "10.128.1.0/24")
        .namespace("shop", "team", "shop")
        .namespace("other", "team", "other")
        .egress("shop", "web", LOAD_BALANCER_IP, network, A, Optional.empty())
        .service("shop", "web", "LoadBalancer", List.of("172.30.0.10"), List.of(new ServiceInfo.Ingress("5.5.5.5", "")))
        .slice("shop", "web", "web-1", "IPv4", ep("10.128.0.5", A), ep("10.128.1.5", B))
        .egress("other", "api", LOAD_BALANCER_IP, network, A, Optional.empty())
        .service("other", "api", "LoadBalancer", List.of("172.30.0.11"), List.of(new ServiceInfo.Ingress("6.6.6.6", "")))
        .slice("other", "api", "api-1", "IPv4", ep("10.128.0.6", A), ep("10.128.1.6", B));
  }

  static Grant grant(String team, List<String> networks, String... lbRanges) {
    return new Grant(new LabelMatcher(Map.of("team", team), List.of()), networks,
        lbRanges.length == 0 ? Optional.empty() : Optional.of(List.of(lbRanges).stream().map(IpPrefix::parse).toList()));
  }

  static GrantPolicy enforced(Grant... grants) {
    return GrantPolicy.of(List.of(grants)).enforced(true);
  }

  @Test
  void aNetworkNotGrantedToItsNamespaceIsRefusedWhileAGrantedNamespaceUsesIt() {
    DesiredState s = twoTenants("1337")
        .grants(enforced(grant("shop", List.of("1337")), grant("other", List.of("42")))).plan(A);

    assertThat(outcome(s, "web").configured()).isTrue();
    assertThat(sourceRules(s)).contains("5000: from 10.128.0.5 lookup 1337 shop/web").noneMatch(r -> r.contains("10.128.0.6"))
        .noneMatch(r -> r.contains("172.30.0.11"));
    assertThat(snat(s)).noneMatch(e -> e.contains("6.6.6.6"));
    ServiceOutcome api = outcome(s, "api");
    assertThat(api.configured()).isFalse();
    assertThat(api.reason()).startsWith(GrantPolicy.REFUSED).contains("namespace 'other'")
        .contains("network '1337'").contains("allow only '42'").contains("listing '1337' in the networks of a grant that selects the namespace");
  }

  @Test
  void aRefusedServiceIsNotSteeredFromOtherNodesEither() {
    DesiredState s = twoTenants("1337").grants(enforced(grant("shop", List.of("1337")))).plan(B);

    assertThat(s.steering().endpoints()).extracting(e -> e.service().toString()).containsOnly("shop/web");
    assertThat(sourceRules(s)).noneMatch(r -> r.contains("10.128.1.6"));
    assertThat(outcome(s, "api").reason()).startsWith(GrantPolicy.REFUSED);
  }

  @Test
  void everyGrantThatSelectsANamespaceAllowsAServiceWithoutNetwork() {
    DesiredState s = twoTenants("").grants(enforced(grant("shop", List.of()))).plan(A);

    assertThat(outcome(s, "web").configured()).isTrue();
    assertThat(snat(s)).anyMatch(e -> e.contains("10.128.0.5") && e.contains("5.5.5.5"));
    ServiceOutcome api = outcome(s, "api");
    assertThat(api.configured()).isFalse();
    assertThat(api.reason()).contains("no grant of the EgressServicePolicy 'cluster' selects namespace 'other'");
  }

  @Test
  void theLoadBalancerIpMustLieInARangeOfTheGrantThatAllowsTheNetwork() {
    GrantPolicy policy = enforced(grant("shop", List.of("1337"), "5.5.5.0/24"), grant("other", List.of("1337"),
        "5.5.5.0/24"));
    DesiredState s = twoTenants("1337").grants(policy).plan(A);

    assertThat(outcome(s, "web").configured()).isTrue(); // 5.5.5.5 inside 5.5.5.0/24
    ServiceOutcome api = outcome(s, "api");
    assertThat(api.configured()).isFalse();
    assertThat(api.reason()).startsWith(GrantPolicy.REFUSED).contains("6.6.6.6").contains("loadBalancerIPRanges")
        .contains("namespace 'other'");
  }

  @Test
  void aGrantWithoutRangesAllowsAnyLoadBalancerIp() {
    DesiredState s = twoTenants("1337")
        .grants(enforced(grant("shop", List.of("1337")), grant("other", List.of("1337")))).plan(A);

    assertThat(outcome(s, "api").configured()).isTrue();
    assertThat(snat(s)).anyMatch(e -> e.contains("6.6.6.6"));
  }

  @Test
  void sourceIpByNetworkNeedsOnlyTheNetworkGranted() {
    Fixture f = twoTenants("1337").egress("other", "api", NETWORK, "1337", EgressServiceInfo.HOST_ALL, Optional.empty())
        .grants(enforced(grant("other", List.of("1337"), "10.0.0.0/8")));

    assertThat(outcome(f.plan(A), "api").configured()).isTrue();
  }

  @Test
  void anEnforcedPolicyWithoutThePolicyObjectGrantsNothing() {
    DesiredState s = twoTenants("").grants(GrantPolicy.off().enforced(true)).plan(A);

    assertThat(s.rules()).isEmpty();
    assertThat(s.snat()).isEmpty();
    assertThat(outcome(s, "web").reason()).contains("there is no EgressServicePolicy 'cluster'")
        .contains("--egress-service-policy=enforce");
  }

  @Test
  void anUnreadablePolicyGrantsNothing() {
    DesiredState s = twoTenants("").grants(GrantPolicy.unreadable("spec.grants is not a list").enforced(true)).plan(A);

    assertThat(s.snat()).isEmpty();
    assertThat(outcome(s, "web").reason()).contains("cannot be read (spec.grants is not a list)");
  }

  @Test
  void offTheGrantsChangeNothing() {
    DesiredState s = twoTenants("1337").grants(GrantPolicy.of(List.of())).plan(A);

    assertThat(outcome(s, "web").configured()).isTrue();
    assertThat(outcome(s, "api").configured()).isTrue();
  }

  @Test
  void aNamespaceWithoutItsNamespaceObjectHasOnlyItsNameLabel() {
    Grant byName = new Grant(new LabelMatcher(Map.of(NamespaceInfo.NAME_LABEL, "shop"), List.of()), List.of("1337"),
        Optional.empty());
    Fixture f = Fixture.cluster()
        .internalNode(A, List.of("192.168.1.10"), "10.128.0.0/24")
        .egress("shop", "web", LOAD_BALANCER_IP, "1337", A, Optional.empty())
        .service("shop", "web", "LoadBalancer", List.of("172.30.0.10"), List.of(new ServiceInfo.Ingress("5.5.5.5", "")))
        .slice("shop", "web", "web-1", "IPv4", ep("10.128.0.5", A))
        .grants(GrantPolicy.of(List.of(byName)).enforced(true));

    assertThat(outcome(f.plan(A), "web").configured()).isTrue();
  }

  @Test
  void theIncrementalPlanFollowsNamespaceLabelsAndPolicyChanges() {
    IncrementalPlanner planner = twoTenants("1337").grants(enforced(grant("shop", List.of("1337")))).incremental(A);
    NodeObservations node = Fixture.nothingObserved();
    assertThat(outcome(planner.plan(node).desired(), "api").configured()).isFalse();

    planner.putNamespace(new NamespaceInfo("other", Map.of("team", "shop")));
    PlanDelta relabelled = planner.plan(node);
    assertThat(relabelled.full()).isFalse();
    assertThat(outcome(relabelled.desired(), "api").configured()).isTrue();
    assertThat(sourceRules(relabelled.desired())).contains("5000: from 10.128.0.6 lookup 1337 other/api");

    planner.setGrantPolicy(enforced(grant("shop", List.of("7"))));
    DesiredState narrowed = planner.plan(node).desired();
    assertThat(outcome(narrowed, "api").configured()).isFalse();
    assertThat(outcome(narrowed, "web").configured()).isFalse();
    assertThat(narrowed.rules()).isEmpty();
  }
}

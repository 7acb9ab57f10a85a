package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Instant;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * Two EgressServices whose host labels are equal ({@code team/a-web} and {@code team-a/web} both label their host
 * {@code egress-service.k8s.ovn.org/team-a-web}): the older keeps working, the younger is configured nowhere (even
 * when another allocator gave it a host), with a reason naming the older; when the older goes, the younger works.
 */
class HostLabelCollisionPlanTest {
  static final String A = "node-a";
  static final String B = "node-b";
  static final Instant T1 = Instant.parse("2026-01-01T00:00:00Z");
  static final Instant T2 = T1.plusSeconds(60);

  static Fixture collision(Instant victimCreated, Instant attackerCreated) {
    return Fixture.cluster()
        .internalNode(A, List.of("192.168.1.10"), "10.128.0.0/24")
        .internalNode(B, List.of("192.168.1.11"), "10.128.1.0/24")
        .egress("team-a", "web", LOAD_BALANCER_IP, "", A, Optional.of(victimCreated))
        .service("team-a", "web", "LoadBalancer", List.of("172.30.0.10"), List.of(new ServiceInfo.Ingress("5.5.5.5", "")))
        .slice("team-a", "web", "web-1", "IPv4", ep("10.128.0.5", A))
        .egress("team", "a-web", LOAD_BALANCER_IP, "", B, Optional.of(attackerCreated))
        .service("team", "a-web", "LoadBalancer", List.of("172.30.0.11"), List.of(new ServiceInfo.Ingress("6.6.6.6", "")))
        .slice("team", "a-web", "a-web-1", "IPv4", ep("10.128.1.6", B));
  }

  @Test
  void theYoungerOfTwoServicesWithOneHostLabelIsRefusedNamingTheOlder() {
    DesiredState onB = collision(T1, T2).plan(B);

    ServiceOutcome attacker = outcome(onB, "a-web");
    assertThat(attacker.configured()).isFalse();
    assertThat(attacker.reason()).startsWith(HostLabels.REFUSED)
        .contains("'egress-service.k8s.ovn.org/team-a-web'").contains("'team-a/web'");
    assertThat(snat(onB)).noneMatch(e -> e.contains("6.6.6.6"));

    DesiredState onA = collision(T1, T2).plan(A);
    assertThat(outcome(onA, "web").configured()).isTrue();
    assertThat(snat(onA)).anyMatch(e -> e.contains("5.5.5.5"));
  }

  @Test
  void theOlderWinsWhicheverNameSortsFirst() {
    DesiredState onA = collision(T2, T1).plan(A);

    assertThat(outcome(onA, "web").reason()).contains("'team/a-web'");
    assertThat(outcome(collision(T2, T1).plan(B), "a-web").configured()).isTrue();
  }

  @Test
  void ofTwoServicesOfOneAgeTheFirstByNamespaceAndNameHoldsTheLabel() {
    DesiredState onA = collision(T1, T1).plan(A);

    // team/a-web sorts before team-a/web ('/' < '-' is false: "team" is a prefix of "team-a")
    assertThat(outcome(onA, "web").reason()).contains("'team/a-web'");
  }

  @Test
  void whenTheOlderGoesTheYoungerIsConfigured() {
    IncrementalPlanner planner = collision(T1, T2).incremental(B);
    NodeObservations node = Fixture.nothingObserved();
    assertThat(outcome(planner.plan(node).desired(), "a-web").configured()).isFalse();

    planner.removeEgressService(new ObjectRef("team-a", "web"));
    PlanDelta after = planner.plan(node);

    assertThat(after.full()).isFalse();
    assertThat(outcome(after.desired(), "a-web").configured()).isTrue();
    assertThat(snat(after.desired())).anyMatch(e -> e.contains("10.128.1.6") && e.contains("6.6.6.6"));
  }
}

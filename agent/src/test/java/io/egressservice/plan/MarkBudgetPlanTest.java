package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.model.SteeringConfig;
import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static io.egressservice.plan.SourceIpBy.NETWORK;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpPrefix;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Mark mode's budget: the mask's marks go to the oldest services, each service all the marks it needs on the node or
 * nothing there (no rule, mark, SNAT element or steering), whatever order the services arrived in, and one namespace
 * takes at most {@code --mark-networks-per-namespace} networks.
 */
class MarkBudgetPlanTest {
  static final String A = "node-a";
  static final String B = "node-b";
  static final Instant T0 = Instant.parse("2026-01-01T00:00:00Z");
  /** Two bits: three marks. */
  static final long THREE_MARKS = 0x3000000L;
  static final String NS2 = "shop";

  static Fixture cluster(long mask, int perNamespace) {
    return Fixture.cluster()
        .internalNode(A, List.of("192.168.1.10"), "10.128.0.0/24")
        .internalNode(B, List.of("192.168.1.11"), "10.128.1.0/24")
        .config(PlanConfig.defaults().withCidrs(List.of(), List.of(IpPrefix.parse("172.30.0.0/16")), List.of())
            .withRuleMode(RuleMode.MARK, mask).withMarkNetworksPerNamespace(perNamespace));
  }

  /** A LoadBalancerIP service on {@code network}, host {@code host}, one endpoint on {@code node}, created at second s. */
  static Fixture lbService(Fixture f, String ns, String name, String network, String host, String endpoint,
      String node, String lbIp, int second) {
    f.egress(ns, name, LOAD_BALANCER_IP, network, host, Optional.of(T0.plusSeconds(second)));
    f.service(ns, name, "LoadBalancer", List.of("172.30.1." + (second % 250 + 1)),
        List.of(new ServiceInfo.Ingress(lbIp, "")));
    return f.slice(ns, name, name + "-v4", "IPv4", ep(endpoint, node));
  }

  /** A sourceIPBy Network service without endpoints or LB IP (anyone allowed to create one can): its ClusterIP's mark. */
  static Fixture networkService(Fixture f, String ns, String name, String network, int second) {
    f.egress(ns, name, NETWORK, network, "ALL", Optional.of(T0.plusSeconds(second)));
    return f.service(ns, name, "LoadBalancer", List.of("172.30.2." + (second % 250 + 1)), List.of());
  }

  /** Three marks, taken by three older Network services; then shop/late (network 200, host node-a). */
  static Fixture lateAfterThreeNetworks(String endpoint, String node) {
    Fixture f = cluster(THREE_MARKS, 0);
    for (int n = 1; n <= 3; n++) {
      networkService(f, "tenant", "net" + n, Integer.toString(n), n);
    }
    return lbService(f, "shop", "late", "200", A, endpoint, node, "5.5.5.7", 10);
  }

  static ServiceOutcome outcomeOf(DesiredState s, String ns, String name) {
    return s.services().stream().filter(o -> o.service().equals(new ObjectRef(ns, name))).findFirst().orElseThrow();
  }

  /** Nothing of {@code ref} in the plan: no rule, mark, SNAT element, steered endpoint or received endpoint. */
  static void assertNothingOf(DesiredState s, ObjectRef ref) {
    assertThat(s.rules()).as("rules of %s", ref).noneMatch(r -> r.service().equals(Optional.of(ref)));
    assertThat(s.marks()).as("marks of %s", ref).noneMatch(m -> m.service().equals(ref));
    assertThat(s.snat()).as("SNAT of %s", ref).noneMatch(e -> e.service().equals(ref));
    assertThat(s.steering().endpoints()).as("steering of %s", ref).noneMatch(e -> e.service().equals(ref));
    assertThat(s.held()).as("held endpoints of %s", ref).noneMatch(e -> e.service().equals(ref));
    ServiceOutcome o = outcomeOf(s, ref.namespace(), ref.name());
    assertThat(o.configured()).isFalse();
    assertThat(o.steeredIn()).as("guard entries of %s", ref).isEmpty();
    assertThat(o.steeredEndpoints()).isEmpty();
  }

  @Test
  void anOlderLoadBalancerIpServiceKeepsItsMarkAndSnatWhileYoungerNetworkServicesExhaustTheMask() {
    Fixture f = lbService(cluster(PlanConfig.DEFAULT_MARK_MASK, 0), "shop", "web", "100", A, "10.128.0.5", A,
        "5.5.5.5", 0);
    for (int n = 1; n <= 63; n++) {
      networkService(f, "tenant", "net" + n, Integer.toString(n), n);
    }

    DesiredState s = f.plan(A);

    assertThat(outcomeOf(s, "shop", "web").configured()).isTrue();
    assertThat(snat(s)).containsExactly("10.128.0.5 -> 5.5.5.5 shop/web");
    assertThat(s.marks()).filteredOn(m -> m.service().name().equals("web"))
        .extracting(m -> m.source() + " -> " + m.table())
        .containsExactlyInAnyOrder("10.128.0.5 -> 100", "172.30.1.1 -> 100");
    assertThat(s.networkMarks()).hasSize(63).containsKey(100L).doesNotContainKey(63L);
    ServiceOutcome youngest = outcomeOf(s, "tenant", "net63");
    assertThat(youngest.reason()).startsWith("no free mark for table 63 in --mark-mask 0x3f000000 (63 networks at most");
    assertNothingOf(s, new ObjectRef("tenant", "net63"));
    assertThat(s.rules()).as("no fwmark rule for the refused network").noneMatch(r -> r.table().name().equals("63"));
  }

  @Test
  void aRefusedLoadBalancerIpServiceHasNoSnatElementRuleOrMark() {
    Fixture f = lateAfterThreeNetworks("10.128.0.7", A);

    DesiredState s = f.plan(A);

    assertThat(outcomeOf(s, "shop", "late").reason()).startsWith("no free mark for table 200");
    assertNothingOf(s, new ObjectRef("shop", "late"));
    assertThat(snat(s)).isEmpty();
    assertThat(s.networkMarks()).containsOnlyKeys(1L, 2L, 3L);
  }

  @Test
  void aServiceRefusedItsNetworksMarkStillTakesNoSteeringMark() {
    // On node-b, "late" steers its endpoint to its host node-a: a steering table's mark, and none is left.
    Fixture f = lateAfterThreeNetworks("10.128.1.7", B);

    DesiredState onB = f.plan(B);
    DesiredState onA = f.plan(A);

    assertThat(outcomeOf(onB, "shop", "late").reason()).startsWith("no free mark for table 7000");
    assertNothingOf(onB, new ObjectRef("shop", "late"));
    assertThat(onB.steering().routes()).isEmpty();
    assertThat(outcomeOf(onA, "shop", "late").reason()).as("the host receives nothing for it either")
        .startsWith("no free mark for table 200");
    assertNothingOf(onA, new ObjectRef("shop", "late"));
    assertThat(onA.steering().receives()).isFalse();
  }

  @Test
  void aServiceNeedingTwoMarksOfWhichOnlyOneIsFreeTakesNeither() {
    // node-b also receives for "move" (a planned move, host node-a): its network's table and the steering table.
    Fixture f = cluster(THREE_MARKS, 0);
    networkService(f, "tenant", "net1", "1", 1);
    networkService(f, "tenant", "net2", "2", 2);
    f.egress(new EgressServiceInfo(new ObjectRef("shop", "move"), Optional.of(T0.plusSeconds(5)), LOAD_BALANCER_IP,
        "200", A, Optional.empty(), B));
    f.service("shop", "move", "LoadBalancer", List.of("172.30.1.9"), List.of(new ServiceInfo.Ingress("5.5.5.9", "")));
    f.slice("shop", "move", "move-v4", "IPv4", ep("10.128.1.9", B), ep("10.128.0.9", A));
    networkService(f, "tenant", "net3", "3", 9);

    DesiredState s = f.plan(B);

    assertThat(outcomeOf(s, "shop", "move").reason()).startsWith("no free mark for table 200, 7000");
    assertNothingOf(s, new ObjectRef("shop", "move"));
    assertThat(s.networkMarks()).as("what move did not take, the younger net3 got").containsOnlyKeys(1L, 2L, 3L);
  }

  @Test
  void aYoungerServiceWithANameThatSortsFirstDoesNotTakeAnOlderServicesMark() {
    Fixture f = cluster(THREE_MARKS, 0);
    lbService(f, "zz-victim", "zz-web", "100", A, "10.128.0.5", A, "5.5.5.5", 0);
    for (int n = 1; n <= 3; n++) {
      networkService(f, "aaa", "aaa" + n, Integer.toString(n), 10 + n);
    }

    DesiredState s = f.plan(A);

    assertThat(outcomeOf(s, "zz-victim", "zz-web").configured()).isTrue();
    assertThat(snat(s)).containsExactly("10.128.0.5 -> 5.5.5.5 zz-victim/zz-web");
    assertThat(outcomeOf(s, "aaa", "aaa3").reason()).startsWith("no free mark for table 3");
  }

  @Test
  void anOlderServiceThatComesToNeedAMarkTakesTheYoungestServicesMark() {
    // The decision: who holds a mark is a function of the services' ages, not of history. An older service only
    // comes to need a mark through its own object (created before the younger ones), never through a new name.
    Fixture f = cluster(THREE_MARKS, 0);
    f.egress("shop", "web", LOAD_BALANCER_IP, "100", A, Optional.of(T0));
    f.slice("shop", "web", "web-v4", "IPv4", ep("10.128.0.5", A));
    for (int n = 1; n <= 3; n++) {
      networkService(f, "tenant", "net" + n, Integer.toString(n), n);
    }
    IncrementalPlanner planner = planner(f);
    DesiredState before = planner.plan(observations()).desired();
    assertThat(outcomeOf(before, "shop", "web").configured()).as("no Service yet").isFalse();
    assertThat(before.networkMarks()).containsOnlyKeys(1L, 2L, 3L);

    planner.putService(new ServiceInfo(new ObjectRef("shop", "web"), "LoadBalancer", List.of("172.30.1.1"),
        List.of(new ServiceInfo.Ingress("5.5.5.5", ""))));
    DesiredState after = planner.plan(observations()).desired();

    assertThat(outcomeOf(after, "shop", "web").configured()).isTrue();
    assertThat(after.networkMarks()).containsOnlyKeys(1L, 2L, 100L);
    assertThat(outcomeOf(after, "tenant", "net3").reason()).startsWith("no free mark for table 3");
    assertNothingOf(after, new ObjectRef("tenant", "net3"));
  }

  @Test
  void aNamespaceBeyondItsShareOfNetworksHasItsYoungestServicesRefusedNamingTheLimit() {
    Fixture f = cluster(PlanConfig.DEFAULT_MARK_MASK, 2);
    networkService(f, "team", "one", "1", 1);
    networkService(f, "team", "two", "2", 2);
    networkService(f, "team", "three", "3", 3);
    networkService(f, "team", "again", "1", 4);
    lbService(f, "team", "steered", "2", B, "10.128.0.8", A, "5.5.5.8", 5);
    networkService(f, "other", "three", "3", 6);

    DesiredState s = f.plan(A);

    ServiceOutcome refused = outcomeOf(s, "team", "three");
    assertThat(refused.reason()).startsWith("no free mark for namespace team: it holds marks for 2 networks on this"
        + " node, its limit (--mark-networks-per-namespace 2)");
    assertNothingOf(s, new ObjectRef("team", "three"));
    assertThat(outcomeOf(s, "team", "again").configured()).as("a network the namespace holds already").isTrue();
    assertThat(outcomeOf(s, "team", "steered").configured()).as("steering tables are not the namespace's networks")
        .isTrue();
    assertThat(outcomeOf(s, "other", "three").configured()).as("another namespace has its own share").isTrue();
    assertThat(s.networkMarks()).containsOnlyKeys(1L, 2L, 3L, SteeringConfig.DEFAULT_FIRST_TABLE);
  }

  @Test
  void withoutTheNamespaceLimitOneNamespaceMayTakeEveryMark() {
    Fixture f = cluster(THREE_MARKS, 0);
    for (int n = 1; n <= 3; n++) {
      networkService(f, "team", "net" + n, Integer.toString(n), n);
    }

    assertThat(f.plan(A).services()).allMatch(ServiceOutcome::configured);
  }

  @Test
  void everyOrderOfArrivalGivesTheSameOutcomeIncrementallyAndInFull() {
    Fixture all = cluster(THREE_MARKS, 1);
    lbService(all, "shop", "web", "100", A, "10.128.0.5", A, "5.5.5.5", 0);
    lbService(all, "shop", "steered", "", B, "10.128.0.6", A, "5.5.5.6", 1);
    networkService(all, "team", "one", "1", 2);
    networkService(all, "team", "two", "2", 3);
    networkService(all, "team", "three", "1", 4);
    networkService(all, "other", "four", "4", 5);
    lbService(all, "other", "late", "5", A, "10.128.0.9", A, "5.5.5.9", 6);
    NodeInputs in = all.inputs(A);
    DesiredState oracle = Planner.plan(in);
    assertThat(oracle.services()).filteredOn(ServiceOutcome::configured).extracting(o -> o.service().name())
        .containsExactlyInAnyOrder("web", "steered", "one", "three");
    assertThat(outcomeOf(oracle, "team", "two").reason()).contains("--mark-networks-per-namespace 1");
    assertThat(outcomeOf(oracle, "other", "four").reason()).startsWith("no free mark for table 4");
    assertThat(outcomeOf(oracle, "other", "late").reason()).startsWith("no free mark for table 5");

    Random random = new Random(44);
    for (int round = 0; round < 40; round++) {
      List<Runnable> puts = new ArrayList<>();
      IncrementalPlanner planner = new IncrementalPlanner(A, in.config());
      in.nodes().forEach(planner::putNode);
      in.egressServices().forEach(e -> puts.add(() -> planner.putEgressService(e)));
      in.services().forEach(svc -> puts.add(() -> planner.putService(svc)));
      in.endpointSlices().forEach(sl -> puts.add(() -> planner.putSlice(sl)));
      Collections.shuffle(puts, random);
      DesiredState last = null;
      for (Runnable put : puts) {
        put.run();
        if (random.nextInt(3) == 0) {
          last = planner.plan(observations()).desired();
        }
      }
      last = planner.plan(observations()).desired();
      assertThat(outcomes(last)).as("round %d", round).isEqualTo(outcomes(oracle));
      assertThat(last.networkMarks()).as("round %d", round).isEqualTo(oracle.networkMarks());
      assertThat(sorted(last.snat())).isEqualTo(sorted(oracle.snat()));
      assertThat(sorted(last.marks())).isEqualTo(sorted(oracle.marks()));
      assertThat(sorted(last.rules())).isEqualTo(sorted(oracle.rules()));
    }
  }

  @Test
  void aTableAMarkIsTakenFromGetsAValueNoOtherTableHeldInTheKernelWhileOneIsFree() {
    Fixture f = cluster(PlanConfig.DEFAULT_MARK_MASK, 0);
    networkService(f, "team", "one", "1", 1);
    NodeInputs in = f.inputs(A);
    // The kernel still marks for table 9 (a network no service needs any more) with value 1.
    NodeInputs withExisting = new NodeInputs(in.nodeName(), in.egressServices(), in.services(), in.endpointSlices(),
        in.nodes(), in.localAddresses(), in.networks(), in.config(), Map.of(9L, 0x1000000L));

    assertThat(Planner.plan(withExisting).networkMarks()).containsExactly(Map.entry(1L, 0x2000000L));
  }

  @Test
  void whenEverySteeringTableIsTakenTheYoungestServiceToANewHostGetsNothingOnTheNode() {
    // Source mode: 256 steering tables, one per host this node steers to; 257 services, each hosted elsewhere.
    Fixture f = Fixture.cluster().internalNode(A, List.of("192.168.0.1"), "10.128.0.0/23")
        .config(PlanConfig.defaults().withCidrs(List.of(), List.of(IpPrefix.parse("172.30.0.0/16")), List.of()));
    for (int i = 1; i <= SteeringConfig.TABLES + 1; i++) {
      String host = "host-" + i;
      f.internalNode(host, List.of("192.168.1" + i / 250 + "." + (i % 250 + 1)));
      String name = (i == SteeringConfig.TABLES + 1 ? "a" : "z") + "-svc-" + i; // the youngest sorts first by name
      f.egress(NS2, name, LOAD_BALANCER_IP, "", host, Optional.of(T0.plusSeconds(i)));
      f.service(NS2, name, "LoadBalancer", List.of("172.30." + (i / 250 + 3) + "." + (i % 250 + 1)),
          List.of(new ServiceInfo.Ingress("5.5." + (i / 250 + 6) + "." + (i % 250 + 1), "")));
      f.slice(NS2, name, name + "-v4", "IPv4", ep("10.128." + i / 250 + "." + (i % 250 + 1), A));
    }

    DesiredState s = f.plan(A);

    String youngest = "a-svc-" + (SteeringConfig.TABLES + 1);
    assertThat(outcomeOf(s, NS2, youngest).reason()).startsWith(Planner.NOT_STEERED + "host-257: no free steering table");
    assertNothingOf(s, new ObjectRef(NS2, youngest));
    assertThat(s.steering().routes()).hasSize(SteeringConfig.TABLES);
    assertThat(s.services()).filteredOn(ServiceOutcome::configured).hasSize(SteeringConfig.TABLES);
  }

  private static IncrementalPlanner planner(Fixture f) {
    NodeInputs in = f.inputs(A);
    IncrementalPlanner planner = new IncrementalPlanner(A, in.config());
    in.nodes().forEach(planner::putNode);
    in.egressServices().forEach(planner::putEgressService);
    in.services().forEach(planner::putService);
    in.endpointSlices().forEach(planner::putSlice);
    return planner;
  }

  private static NodeObservations observations() {
    return new NodeObservations(List.of(), new NetworkResolution(Map.of(), Map.of(), false), Map.of(), Map.of());
  }

  private static List<String> outcomes(DesiredState s) {
    return s.services().stream().map(o -> o.service() + " " + o.configured() + " " + o.reason()).sorted().toList();
  }

  private static <T> List<String> sorted(List<T> list) {
    return list.stream().map(Object::toString).sorted().toList();
  }
}

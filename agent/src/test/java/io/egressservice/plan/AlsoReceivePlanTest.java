package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.Fixture.snat;
import static io.egressservice.plan.Fixture.sourceRules;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * A planned host move makes before it breaks: the node the allocator names in the also-receive annotation plans the
 * endpoints other nodes steer as the host does (SNAT to the LB IP, the network's rules), so steering nodes may
 * switch to it at any moment; its own endpoints keep following {@code status.host}.
 */
class AlsoReceivePlanTest {
  static final String A = SteeringPlannerTest.A;
  static final String B = SteeringPlannerTest.B;
  static final String C = SteeringPlannerTest.C;

  /** The cluster of {@link SteeringPlannerTest}, web in network (table) 100, host {@code host}, also {@code also}. */
  static Fixture cluster(String host, String also) {
    return SteeringPlannerTest.cluster(host).egress(new EgressServiceInfo(new ObjectRef("default", "web"),
        Optional.empty(), LOAD_BALANCER_IP, "100", host, Optional.empty(), also));
  }

  @Test
  void aNodeThatAlsoReceivesSnatsSteeredEndpointsButKeepsItsOwnSteering() {
    DesiredState onB = cluster(A, B).plan(B);

    assertThat(snat(onB)).as("the endpoints of the other nodes, as on the host; not its own").containsExactlyInAnyOrder(
        "10.128.0.5 -> 5.5.5.5 default/web", "10.128.2.5 -> 5.5.5.5 default/web",
        "fd10:128::5 -> 2001:db8:5::5 default/web", "fd10:128:2::5 -> 2001:db8:5::5 default/web");
    assertThat(SteeringPlannerTest.steering(onB)).as("its own endpoints still go to status.host").containsExactly(
        "10.128.1.5 -> node-a 192.168.1.10 table 7000", "fd10:128:1::5 -> node-a fd00::a table 7000");
    assertThat(sourceRules(onB)).containsExactlyInAnyOrder(
        "5000: from 10.128.1.5 lookup 7000 default/web", "5000: from fd10:128:1::5 lookup 7000 default/web",
        "5000: from 10.128.0.5 lookup 100 default/web", "5000: from 10.128.2.5 lookup 100 default/web",
        "5000: from fd10:128::5 lookup 100 default/web", "5000: from fd10:128:2::5 lookup 100 default/web");
    assertThat(onB.rules()).as("the ClusterIPs' rules route the host's own traffic: not here")
        .noneMatch(r -> r.from().map(f -> f.toString().startsWith("172.30.") || f.toString().startsWith("fd02:"))
            .orElse(false));
    assertThat(onB.steering().receives()).as("the device receives").isTrue();
    ServiceOutcome o = outcome(onB, "web");
    assertThat(o.configured()).isTrue();
    assertThat(o.steeredIn()).contains("10.128.2.5", "fd10:128:2::5");
    assertThat(o.steeredEndpoints()).hasSize(2);
    assertThat(o.reason()).startsWith("also receives for host node-a (planned move");

    // Controls: the host and a plain steering node plan as without the annotation, but that the host's steering port
    // takes the LB IP from node-b while the move is under way (the old host's own pod's flows, SNATed there before).
    DesiredState onA = cluster(A, B).plan(A);
    assertThat(SteeringPlannerTest.senders(outcome(onA, "web")).stream().filter(p -> p.contains("planned move")))
        .containsExactly("5.5.5.5 from 192.168.1.11 (planned move)", "2001:db8:5::5 from fd00::b (planned move)");
    assertThat(onA.services().stream().map(x -> new ServiceOutcome(x.service(), x.configured(), x.reason(),
        x.skippedEndpoints(), x.remoteEndpoints(), x.steeredEndpoints(), x.steeredIn(),
        x.tunnelSenders().stream().filter(t -> !t.handOver()).toList())).toList())
        .isEqualTo(cluster(A, "").plan(A).services());
    assertThat(onA.snat()).isEqualTo(cluster(A, "").plan(A).snat());
    assertThat(onA.rules()).isEqualTo(cluster(A, "").plan(A).rules());
    assertThat(onA.steering()).isEqualTo(cluster(A, "").plan(A).steering());
    assertThat(cluster(A, B).plan(C)).isEqualTo(cluster(A, "").plan(C));
    assertThat(snat(cluster(A, "").plan(B))).as("without the annotation node-b SNATs nothing").isEmpty();
  }

  @Test
  void theOldHostThatAlsoReceivesSteersItsOwnEndpointsToTheNewHost() {
    DesiredState onA = cluster(B, A).plan(A);

    assertThat(SteeringPlannerTest.steering(onA)).containsExactly(
        "10.128.0.5 -> node-b 192.168.1.11 table 7000", "fd10:128::5 -> node-b fd00::b table 7000");
    assertThat(snat(onA)).hasSize(4).noneMatch(e -> e.startsWith("10.128.0.5") || e.startsWith("fd10:128::5"));
  }

  /** An incremental planner of node-b fed every object of {@code in}. */
  private static IncrementalPlanner plannerOnB(NodeInputs in) {
    IncrementalPlanner onB = new IncrementalPlanner(B, in.config());
    in.nodes().forEach(onB::putNode);
    in.services().forEach(onB::putService);
    in.endpointSlices().forEach(onB::putSlice);
    in.egressServices().forEach(onB::putEgressService);
    return onB;
  }

  private static NodeObservations observations(NodeInputs in) {
    return new NodeObservations(in.localAddresses(), in.networks(), in.existingMarks(), in.existingSteerTables());
  }

  @Test
  void theHostAndItsAlsoReceivingNodeAreBothReceivers() {
    NodeInputs in = cluster(A, B).inputs(B);
    IncrementalPlanner onB = plannerOnB(in);
    NodeObservations obs = observations(in);
    onB.plan(obs);
    assertThat(onB.receiving()).containsExactly(new ObjectRef("default", "web"));

    onB.putEgressService(new EgressServiceInfo(new ObjectRef("default", "web"), Optional.empty(), LOAD_BALANCER_IP,
        "100", A, Optional.empty(), ""));
    onB.plan(obs);
    assertThat(onB.receiving()).as("after the move the annotation is removed: node-b lets go").isEmpty();
  }

  @Test
  void aReplanThatKeepsWhatTheNodeReceivesForKeepsTheSameReceivingSet() {
    // At 5,000 services a copy of the set per change was most of what a change allocated beyond its own service.
    NodeInputs in = cluster(A, B).inputs(B);
    IncrementalPlanner onB = plannerOnB(in);
    NodeObservations obs = observations(in);
    onB.plan(obs);
    Set<ObjectRef> before = onB.receiving();

    onB.putEgressService(new EgressServiceInfo(new ObjectRef("default", "web"), Optional.empty(), LOAD_BALANCER_IP,
        "101", A, Optional.empty(), B));
    PlanDelta replanned = onB.plan(obs);

    assertThat(replanned.changedServices()).as("web was planned again").contains(new ObjectRef("default", "web"));
    assertThat(onB.receiving()).as("still received for, so the same set").isSameAs(before)
        .containsExactly(new ObjectRef("default", "web"));
  }
}

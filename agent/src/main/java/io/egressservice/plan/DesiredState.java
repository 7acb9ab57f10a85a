package io.egressservice.plan;

import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.model.SteeringConfig;
import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;

/**
 * The node's desired state: ip rules, SNAT map elements, the in-cluster destinations SNAT skips, and
 * an outcome per EgressService. A full plan's lists are sorted, so equal inputs give equal output; an
 * incremental plan's ({@link IncrementalPlanner}) hold the same elements, in no particular order.
 *
 * @param inCluster the {@code in_cluster_v4/v6} set: aggregated prefixes plus Node addresses
 * @param marks mark mode: which source gets which network's mark (empty in source mode)
 * @param networkMarks mark mode: routing table id to its mark value
 * @param routes {@code throw} routes for the in-cluster destinations (the same prefixes and addresses as
 *     {@code inCluster}, per family) in each table that service rules look up
 * @param refusedInputs inputs the plan refused for the whole node (not one service), each with why, e.g.
 *     a Node pod CIDR that covers a whole address family
 * @param steering the endpoints steered to their host, the steering routes, and whether the device is needed
 * @param held {@code --no-host=drop}: local endpoints of LoadBalancerIP services without a host, whose traffic out
 *     of the cluster is dropped
 */
public record DesiredState(
    String node,
    int priority,
    int ruleProtocol,
    List<RuleSpec> rules,
    List<SnatEntry> snat,
    List<IpPrefix> inCluster,
    List<ServiceOutcome> services,
    RuleMode ruleMode,
    long markMask,
    List<MarkEntry> marks,
    Map<Long, Long> networkMarks,
    List<RouteSpec> routes,
    List<String> refusedInputs,
    SteeringPlan steering,
    List<HeldEndpoint> held) {
  /** A state that holds no endpoint. */
  public DesiredState(String node, int priority, int ruleProtocol, List<RuleSpec> rules, List<SnatEntry> snat,
      List<IpPrefix> inCluster, List<ServiceOutcome> services, RuleMode ruleMode, long markMask,
      List<MarkEntry> marks, Map<Long, Long> networkMarks, List<RouteSpec> routes, List<String> refusedInputs,
      SteeringPlan steering) {
    this(node, priority, ruleProtocol, rules, snat, inCluster, services, ruleMode, markMask, marks, networkMarks,
        routes, refusedInputs, steering, List.of());
  }

  /** A state without steering. */
  public DesiredState(String node, int priority, int ruleProtocol, List<RuleSpec> rules, List<SnatEntry> snat,
      List<IpPrefix> inCluster, List<ServiceOutcome> services, RuleMode ruleMode, long markMask,
      List<MarkEntry> marks, Map<Long, Long> networkMarks, List<RouteSpec> routes, List<String> refusedInputs) {
    this(node, priority, ruleProtocol, rules, snat, inCluster, services, ruleMode, markMask, marks, networkMarks,
        routes, refusedInputs, SteeringPlan.none(SteeringConfig.DEFAULT_PORT));
  }

  /** A state without throw routes, refused inputs or steering. */
  public DesiredState(String node, int priority, int ruleProtocol, List<RuleSpec> rules, List<SnatEntry> snat,
      List<IpPrefix> inCluster, List<ServiceOutcome> services, RuleMode ruleMode, long markMask,
      List<MarkEntry> marks, Map<Long, Long> networkMarks) {
    this(node, priority, ruleProtocol, rules, snat, inCluster, services, ruleMode, markMask, marks, networkMarks,
        List.of(), List.of());
  }

  /** A source-mode state (no marks). */
  public DesiredState(String node, int priority, int ruleProtocol, List<RuleSpec> rules, List<SnatEntry> snat,
      List<IpPrefix> inCluster, List<ServiceOutcome> services) {
    this(node, priority, ruleProtocol, rules, snat, inCluster, services, RuleMode.SOURCE, PlanConfig.DEFAULT_MARK_MASK,
        List.of(), Map.of());
  }

  public DesiredState {
    rules = PlanSlots.frozen(rules);
    snat = PlanSlots.frozen(snat);
    inCluster = List.copyOf(inCluster);
    services = PlanSlots.frozen(services);
    marks = PlanSlots.frozen(marks);
    networkMarks = Map.copyOf(networkMarks);
    routes = List.copyOf(routes);
    refusedInputs = List.copyOf(refusedInputs);
    java.util.Objects.requireNonNull(steering, "steering");
    held = PlanSlots.frozen(held);
  }
}

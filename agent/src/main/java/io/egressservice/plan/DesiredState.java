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

  /** A state built by name: what is not set is empty (source mode, the default mark mask, no steering). */
  public static Builder builder() {
    return new Builder();
  }

  /** A builder that starts from this state. */
  public Builder toBuilder() {
    return new Builder().node(node).priority(priority).ruleProtocol(ruleProtocol).rules(rules).snat(snat)
        .inCluster(inCluster).services(services).ruleMode(ruleMode).markMask(markMask).marks(marks)
        .networkMarks(networkMarks).routes(routes).refusedInputs(refusedInputs).steering(steering).held(held);
  }

  /** Builds a {@link DesiredState} by field name. */
  public static final class Builder {
    private String node = "";
    private int priority = PlanConfig.DEFAULT_PRIORITY;
    private int ruleProtocol = PlanConfig.DEFAULT_RULE_PROTOCOL;
    private List<RuleSpec> rules = List.of();
    private List<SnatEntry> snat = List.of();
    private List<IpPrefix> inCluster = List.of();
    private List<ServiceOutcome> services = List.of();
    private RuleMode ruleMode = RuleMode.SOURCE;
    private long markMask = PlanConfig.DEFAULT_MARK_MASK;
    private List<MarkEntry> marks = List.of();
    private Map<Long, Long> networkMarks = Map.of();
    private List<RouteSpec> routes = List.of();
    private List<String> refusedInputs = List.of();
    private SteeringPlan steering = SteeringPlan.none(SteeringConfig.DEFAULT_PORT);
    private List<HeldEndpoint> held = List.of();

    private Builder() {}

    public Builder node(String v) {
      node = v;
      return this;
    }

    public Builder priority(int v) {
      priority = v;
      return this;
    }

    public Builder ruleProtocol(int v) {
      ruleProtocol = v;
      return this;
    }

    public Builder rules(List<RuleSpec> v) {
      rules = v;
      return this;
    }

    public Builder snat(List<SnatEntry> v) {
      snat = v;
      return this;
    }

    public Builder inCluster(List<IpPrefix> v) {
      inCluster = v;
      return this;
    }

    public Builder services(List<ServiceOutcome> v) {
      services = v;
      return this;
    }

    public Builder ruleMode(RuleMode v) {
      ruleMode = v;
      return this;
    }

    public Builder markMask(long v) {
      markMask = v;
      return this;
    }

    public Builder marks(List<MarkEntry> v) {
      marks = v;
      return this;
    }

    public Builder networkMarks(Map<Long, Long> v) {
      networkMarks = v;
      return this;
    }

    public Builder routes(List<RouteSpec> v) {
      routes = v;
      return this;
    }

    public Builder refusedInputs(List<String> v) {
      refusedInputs = v;
      return this;
    }

    public Builder steering(SteeringPlan v) {
      steering = v;
      return this;
    }

    public Builder held(List<HeldEndpoint> v) {
      held = v;
      return this;
    }

    public DesiredState build() {
      return new DesiredState(node, priority, ruleProtocol, rules, snat, inCluster, services, ruleMode, markMask, marks,
          networkMarks, routes, refusedInputs, steering, held);
    }
  }
}

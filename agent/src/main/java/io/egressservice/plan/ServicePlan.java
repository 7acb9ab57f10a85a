package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * One EgressService's part of a node's plan: what {@link PlanContext} decided for it, and (in mark mode) its
 * rules turned into marks. The node-wide parts (in-cluster set, throw routes, per-network rules, steering routes)
 * are derived from these parts and the node's inputs.
 *
 * @param evaluation the cluster-wide checks and usable endpoints, kept so that a change of who owns a contested
 *     endpoint re-decides the service without evaluating it again
 * @param claimAttempts the endpoint addresses the service tries to own
 * @param sourceOutcome the outcome before marks were handed out; {@link #outcome} is the final one
 * @param sourceRules the per-source rules before mark mode; {@link #rules} are the service's rules in the plan
 * @param steered the endpoints steered to their host; {@link #steeredFinal} without those left without a mark
 * @param steerHosts the hosts a steering table was asked for
 * @param networkRules mark mode: per family/table, the network rule this service would give
 * @param receiver whether this node holds the service's receiving side (its host, or the node it also-receives on):
 *     what the agent reports on {@code /hosting} once applied
 */
record ServicePlan(
    ObjectRef service,
    ServiceOrder order,
    ServiceEvaluation evaluation,
    List<IpPrefix> claimAttempts,
    ServiceOutcome sourceOutcome,
    List<RuleSpec> sourceRules,
    List<SnatEntry> snat,
    List<SteeredEndpoint> steered,
    List<HeldEndpoint> held,
    boolean receivesSteered,
    Set<String> steerHosts,
    ServiceOutcome outcome,
    List<RuleSpec> rules,
    List<MarkEntry> marks,
    Map<String, RuleSpec> networkRules,
    List<SteeredEndpoint> steeredFinal,
    boolean receiver) {
  ServicePlan {
    claimAttempts = List.copyOf(claimAttempts);
    sourceRules = List.copyOf(sourceRules);
    snat = List.copyOf(snat);
    steered = List.copyOf(steered);
    held = List.copyOf(held);
    steerHosts = Set.copyOf(steerHosts);
    rules = List.copyOf(rules);
    marks = List.copyOf(marks);
    networkRules = Map.copyOf(networkRules);
    steeredFinal = List.copyOf(steeredFinal);
  }

  static ServicePlan sourceMode(ObjectRef service, ServiceOrder order, ServiceEvaluation evaluation,
      List<IpPrefix> claimAttempts, ServiceOutcome outcome, List<RuleSpec> rules, List<SnatEntry> snat,
      List<SteeredEndpoint> steered, List<HeldEndpoint> held, boolean receivesSteered, Set<String> steerHosts) {
    List<RuleSpec> r = List.copyOf(rules);
    List<SteeredEndpoint> s = List.copyOf(steered);
    return new ServicePlan(service, order, evaluation, claimAttempts, outcome, r, snat, s, held, receivesSteered,
        steerHosts, outcome, r, List.of(), Map.of(), s, false);
  }

  ServicePlan marked(ServiceOutcome finalOutcome, List<RuleSpec> finalRules, List<MarkEntry> markEntries,
      Map<String, RuleSpec> perNetwork) {
    return new ServicePlan(service, order, evaluation, claimAttempts, sourceOutcome, sourceRules, snat, steered, held,
        receivesSteered, steerHosts, finalOutcome, finalRules, markEntries, perNetwork, steered, receiver);
  }

  /**
   * Refused on this node (a resource it needs ran out): nothing of it is applied, neither rules, marks, SNAT,
   * steering nor the receiving side; what it needs ({@link #sourceRules}, {@link #steerHosts}) and claims stays, so
   * it is asked again in its turn.
   */
  ServicePlan refused(String reason) {
    ServiceOutcome out = new ServiceOutcome(service, false, reason, sourceOutcome.skippedEndpoints(), List.of());
    return new ServicePlan(service, order, evaluation, claimAttempts, sourceOutcome, sourceRules, List.of(), List.of(),
        List.of(), false, steerHosts, out, List.of(), List.of(), Map.of(), List.of(), false);
  }

  ServicePlan withSteeredFinal(List<SteeredEndpoint> kept) {
    return new ServicePlan(service, order, evaluation, claimAttempts, sourceOutcome, sourceRules, snat, steered, held,
        receivesSteered, steerHosts, outcome, rules, marks, networkRules, kept, receiver);
  }

  ServicePlan receiving(boolean isReceiver) {
    return isReceiver == receiver ? this : new ServicePlan(service, order, evaluation, claimAttempts, sourceOutcome,
        sourceRules, snat, steered, held, receivesSteered, steerHosts, outcome, rules, marks, networkRules,
        steeredFinal, isReceiver);
  }
}

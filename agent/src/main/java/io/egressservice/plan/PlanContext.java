package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.ip.IpPrefix;
import java.util.List;
import java.util.Map;

/**
 * One planning pass over one node's inputs: what the full plan ({@link Planner}) and the incremental one
 * ({@link IncrementalPlanner}) both plan every service through; only who owns a contested endpoint ({@link Claims})
 * and which services are planned differ. It puts together the node-wide facts ({@link NodeFacts}), the per-service
 * evaluation that is the same on every node ({@link ServiceEvaluator}), this node's part of a service
 * ({@link ServiceDecider}) and mark mode's marks ({@link NetworkMarks}).
 */
final class PlanContext {
  /** Who owns an endpoint address that several EgressServices name: the oldest that tries to. */
  interface Claims {
    /** {@code service} claims {@code address}: null when it owns it, else the older owner. */
    ObjectRef claim(IpPrefix address, ObjectRef service);
  }

  private final NodeInputs in;
  private final NodeFacts facts;
  private final ServiceEvaluator evaluator;
  private final SteerTables steerTables;
  private final ServiceDecider decider;
  private final NetworkMarks marks;

  PlanContext(NodeInputs in) {
    this.in = in;
    this.facts = new NodeFacts(in);
    this.evaluator = new ServiceEvaluator(in, facts);
    this.steerTables = new SteerTables(in.config().steering(), in.existingSteerTables());
    this.decider = new ServiceDecider(in.config(), facts, steerTables, in.networks());
    this.marks = new NetworkMarks(in.config(), in.existingMarks());
  }

  PlanConfig config() {
    return in.config();
  }

  /** Who may send to the steering port (node-wide; read from the Nodes when the context is built). */
  SteeringPeers steeringPeers() {
    return facts.steeringPeers();
  }

  String nodeName() {
    return in.nodeName();
  }

  /** Complete once the context is built (the node-wide inputs are read in the constructor). */
  List<String> refusedInputs() {
    return facts.refusedInputs();
  }

  Map<Long, Long> existingMarks() {
    return in.existingMarks();
  }

  // The incremental planner keeps these in step with its inputs between full plans.
  void putService(ServiceInfo s) {
    evaluator.putService(s);
  }

  void removeService(ObjectRef ref) {
    evaluator.removeService(ref);
  }

  void putNamespace(NamespaceInfo ns) {
    evaluator.putNamespace(ns);
  }

  void removeNamespace(String name) {
    evaluator.removeNamespace(name);
  }

  /** Returns the other services that share the host label of {@code es} ({@link HostLabels}). */
  List<ObjectRef> putEgressService(EgressServiceInfo es) {
    return evaluator.putEgressService(es);
  }

  List<ObjectRef> removeEgressService(ObjectRef ref) {
    return evaluator.removeEgressService(ref);
  }

  /** The Services holding {@code ip} as a LoadBalancer ingress IP. */
  List<ServiceInfo> lbIpHolders(IpPrefix ip) {
    return evaluator.lbIpHolders(ip);
  }

  void setSlices(ObjectRef service, List<EndpointSliceInfo> slices) {
    evaluator.setSlices(service, slices);
  }

  /** Only hosts that already have a steering table are answered from now on ({@link SteerTables#freeze}). */
  void freezeSteerTables() {
    steerTables.freeze();
  }

  /** Whether a plan since the last call asked a table for a host that had none. */
  boolean steerTableMissed() {
    return steerTables.missed();
  }

  /** One EgressService's part of the plan; {@code claims} decides its contested endpoints. Never throws. */
  ServicePlan plan(EgressServiceInfo es, ServiceOrder order, Claims claims) {
    return decide(es, order, evaluateSafely(es), claims);
  }

  /** {@link #evaluate}, or a refusal of this service alone when its inputs make planning fail. */
  ServiceEvaluation evaluateSafely(EgressServiceInfo es) {
    try {
      return evaluate(es);
    } catch (RuntimeException e) {
      return ServiceEvaluation.refused("planning this service failed: " + e);
    }
  }

  /** Cluster-wide checks (the same on every node) and the service's usable endpoints. */
  ServiceEvaluation evaluate(EgressServiceInfo es) {
    return evaluator.evaluate(es);
  }

  /** The addresses the service tries to own, given its evaluation: what {@link #decide} claims. */
  List<IpPrefix> claimAttempts(ServiceEvaluation ev) {
    return decider.claimAttempts(ev);
  }

  /** The service's part for an evaluation made before (an incremental plan reuses it). Never throws. */
  ServicePlan decide(EgressServiceInfo es, ServiceOrder order, ServiceEvaluation ev, Claims claims) {
    return decider.decide(es, order, ev, claims);
  }

  /** Mark mode: the networks' marks, oldest service first, all or nothing ({@link NetworkMarks#allocate}). */
  MarkAllocation allocateMarks(Iterable<NetworkMarks.Need> oldestFirst) {
    return marks.allocate(oldestFirst);
  }

  /** Mark mode: the service's per-source rules as marks, or nothing when refused ({@link NetworkMarks#withMarks}). */
  ServicePlan withMarks(ServicePlan p, MarkAllocation allocation) {
    return marks.withMarks(p, allocation);
  }

  /** The destinations SNAT skips and the service tables throw back ({@link NodeFacts#inClusterSet}). */
  List<IpPrefix> inClusterSet() {
    return facts.inClusterSet();
  }
}

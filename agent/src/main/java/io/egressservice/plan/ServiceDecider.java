package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.SteeringConfig;
import io.egressservice.model.NoHost;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.ServiceOutcome.SkippedEndpoint;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * This node's part of one EgressService, from the service's {@link ServiceEvaluation}: which of its endpoints it
 * owns (an endpoint several services name belongs to the oldest, as {@link PlanContext.Claims} says), and what this
 * node does with them by its role: the host receives ({@link ReceivingSide}), another node steers its own endpoints
 * to the host or leaves them, a node the also-receive annotation names does both, and with {@code --no-host=drop}
 * a service without a host has this node's endpoints held.
 */
final class ServiceDecider {
  /** One service's part of the plan as it is being built. */
  static final class Parts {
    final List<RuleSpec> rules = new ArrayList<>();
    final List<SnatEntry> snat = new ArrayList<>();
    final List<SteeredEndpoint> steered = new ArrayList<>();
    final List<HeldEndpoint> held = new ArrayList<>();
    final Set<String> steerHosts = new TreeSet<>();
    boolean receivesSteered;
    /** This node holds the receiving side of the service (host, or also-receive). */
    boolean receiver;
  }

  private final PlanConfig config;
  private final NodeFacts facts;
  private final SteerTables steerTables;
  private final ReceivingSide receiving;
  private final NetworkResolution networks;

  ServiceDecider(PlanConfig config, NodeFacts facts, SteerTables steerTables, NetworkResolution networks) {
    this.config = config;
    this.networks = networks;
    this.facts = facts;
    this.steerTables = steerTables;
    this.receiving = new ReceivingSide(config, facts, networks);
  }

  /** The addresses the service tries to own, given its evaluation: what {@link #decide} claims. */
  List<IpPrefix> claimAttempts(ServiceEvaluation ev) {
    if (ev.notConfiguredReason().isPresent()) {
      if (config.steering().noHost() != NoHost.DROP) {
        return List.of();
      }
      List<IpPrefix> out = new ArrayList<>();
      for (CandidateEndpoint c : ev.endpoints()) {
        if (facts.isSteerLocal(c)) {
          out.add(c.address());
        }
      }
      return out;
    }
    if (ev.lbIpRefusal().isPresent()) {
      return List.of();
    }
    List<IpPrefix> out = new ArrayList<>(ev.endpoints().size());
    ev.endpoints().forEach(c -> out.add(c.address()));
    return out;
  }

  /** The service's part for an evaluation made before (an incremental plan reuses it). Never throws. */
  ServicePlan decide(EgressServiceInfo es, ServiceOrder order, ServiceEvaluation ev, PlanContext.Claims claims) {
    List<IpPrefix> attempts = claimAttempts(ev);
    Parts parts = new Parts();
    try {
      ServiceOutcome outcome = planService(es, ev, claims, parts);
      outcome = outcome.withWarnings(inClusterWarnings(outcome, parts));
      if (outcome.configured()) {
        outcome = outcome.withWarnings(NoRouteWarning.of(es, ev, parts.rules, networks));
      }
      return ServicePlan.sourceMode(es.ref(), order, ev, attempts, outcome, parts.rules, parts.snat, parts.steered,
          parts.held, parts.receivesSteered, parts.steerHosts).receiving(parts.receiver);
    } catch (RuntimeException e) {
      // One object must not fail the node's plan: whatever this service's inputs hold, it is refused alone.
      return failed(es, order, ev, attempts, e);
    }
  }

  /**
   * A configured service whose endpoints' family has no known pod network (no Node has {@code spec.podCIDRs} of it
   * and no {@code --cluster-cidr}): their traffic to other pods is not recognised as in-cluster, so it takes the
   * service's network and SNAT like traffic that leaves the cluster. Nothing the plan can repair; said on every
   * node that acts for the service.
   */
  private List<String> inClusterWarnings(ServiceOutcome outcome, Parts parts) {
    if (!outcome.configured() || !config.inClusterExclusion()) {
      return List.of();
    }
    Set<IpFamily> used = java.util.EnumSet.noneOf(IpFamily.class);
    parts.rules.forEach(r -> used.add(r.family()));
    parts.snat.forEach(s -> used.add(s.source().family()));
    List<String> out = new ArrayList<>();
    for (IpFamily f : used) {
      if (facts.podNetworks(f).isEmpty()) {
        out.add(POD_NETWORK_UNKNOWN + NodeFacts.familyName(f) + " is unknown (no Node has spec.podCIDRs of it and"
            + " --cluster-cidr names none): this service's endpoints' traffic to other pods takes its network and"
            + " SNAT as if it left the cluster; set --cluster-cidr");
      }
    }
    return out;
  }

  /** How a warning about an unknown pod network starts (the Event's reason is chosen by it). */
  public static final String POD_NETWORK_UNKNOWN = "the pod network of ";

  private ServicePlan failed(EgressServiceInfo es, ServiceOrder order, ServiceEvaluation ev, List<IpPrefix> attempts,
      RuntimeException e) {
    return ServicePlan.sourceMode(es.ref(), order, ev, attempts,
        notConfigured(es.ref(), "planning this service failed: " + e, List.of()), List.of(), List.of(), List.of(),
        List.of(), false, Set.of());
  }

  /**
   * {@code --no-host=drop}: this node's endpoints (not owned by an older service) of a service without a host
   * are held; returns how many.
   */
  private int hold(EgressServiceInfo es, List<CandidateEndpoint> endpoints, PlanContext.Claims claims, Parts parts) {
    if (config.steering().noHost() != NoHost.DROP) {
      return 0;
    }
    int n = 0;
    for (CandidateEndpoint c : endpoints) {
      if (facts.isSteerLocal(c) && claims.claim(c.address(), es.ref()) == null) {
        parts.held.add(new HeldEndpoint(es.ref(), c.address()));
        n++;
      }
    }
    return n;
  }

  private static String holdDescription(int holds) {
    return holds + " local endpoint(s) held: their traffic out of the cluster is dropped until the service has a "
        + "host (--no-host=drop)";
  }

  private ServiceOutcome planService(EgressServiceInfo es, ServiceEvaluation ev, PlanContext.Claims claims, Parts parts) {
    if (ev.notConfiguredReason().isPresent()) {
      String reason = ev.notConfiguredReason().get();
      int holds = hold(es, ev.endpoints(), claims, parts);
      if (holds > 0) {
        reason += "; " + holdDescription(holds);
      }
      return notConfigured(es.ref(), reason, ev.skipped());
    }
    if (ev.lbIpRefusal().isPresent()) {
      // Only the host says why (and reports it): every other node just leaves the service to it. Its
      // endpoints claim nothing, so a refused service never keeps another from its own pods.
      return es.statusHost().equals(facts.nodeName())
          ? notConfigured(es.ref(), ev.lbIpRefusal().get(), ev.skipped())
          : notConfigured(es.ref(), "handled by node " + es.statusHost() + " (status.host)", ev.skipped());
    }
    List<SkippedEndpoint> skipped = new ArrayList<>(ev.skipped());
    List<CandidateEndpoint> owned = new ArrayList<>();
    for (CandidateEndpoint c : ev.endpoints()) {
      ObjectRef owner = claims.claim(c.address(), es.ref());
      if (owner == null) {
        owned.add(c);
      } else {
        skipped.add(new SkippedEndpoint(
            c.address().toString(),
            "also an endpoint of " + owner + ", whose EgressService is older and owns it"));
      }
    }
    return actOnNode(es, ev, owned, skipped, parts);
  }

  private ServiceOutcome actOnNode(
      EgressServiceInfo es,
      ServiceEvaluation ev,
      List<CandidateEndpoint> owned,
      List<SkippedEndpoint> skipped,
      Parts parts) {
    boolean lbMode = es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP;
    if (lbMode && !es.statusHost().equals(facts.nodeName())) {
      if (!config.steering().steers()) {
        return notConfigured(es.ref(), "handled by node " + es.statusHost() + " (status.host)", skipped);
      }
      return es.alsoReceives(facts.nodeName())
          ? steerAndReceive(es, ev, owned, skipped, parts)
          : steerToHost(es, ev, owned, skipped, parts);
    }
    return receiving.receive(es, ev, owned, skipped, parts, true);
  }

  /**
   * A node named by the also-receive annotation, not the host (a planned move): its own endpoints follow
   * {@code status.host} (steered there), while the endpoints other nodes steer are received and SNATed here as
   * on the host, so the steering nodes may switch to (or away from) this node at any moment without a gap.
   */
  private ServiceOutcome steerAndReceive(EgressServiceInfo es, ServiceEvaluation ev, List<CandidateEndpoint> owned,
      List<SkippedEndpoint> skipped, Parts parts) {
    List<CandidateEndpoint> local = owned.stream().filter(facts::isSteerLocal).toList();
    List<CandidateEndpoint> others = owned.stream().filter(c -> !facts.isSteerLocal(c)).toList();
    ServiceOutcome steering = steerToHost(es, ev, local, skipped, parts);
    ServiceOutcome received = receiving.receive(es, ev, others, skipped, parts, false);
    if (!received.configured()) {
      return received;
    }
    List<String> remote = new ArrayList<>(received.remoteEndpoints());
    remote.addAll(steering.remoteEndpoints());
    String reason = "also receives for host " + es.statusHost() + " (planned move, " + EgressServiceInfo.ALSO_RECEIVE_ANNOTATION
        + "): " + received.reason() + "; own endpoints: " + steering.reason();
    return new ServiceOutcome(es.ref(), true, reason, skipped, remote, steering.steeredEndpoints(),
        received.steeredIn(), received.tunnelSenders());
  }

  /**
   * A node that is not the host of a LoadBalancerIP service, with {@code --remote-endpoints=steer}: its
   * local endpoints go to the host's InternalIP of their family through a steering table (a rule per
   * source; marks in mark mode), and leave there with the LB IP. A family the host has no InternalIP of
   * is reported, never guessed.
   */
  private ServiceOutcome steerToHost(EgressServiceInfo es, ServiceEvaluation ev, List<CandidateEndpoint> owned,
      List<SkippedEndpoint> skipped, Parts parts) {
    String host = es.statusHost();
    Optional<NodeInfo> hostNode = facts.node(host);
    List<SteeredEndpoint> mine = new ArrayList<>();
    Set<String> missing = new TreeSet<>();
    int unsteered = 0;
    for (CandidateEndpoint c : owned) {
      if (!facts.isSteerLocal(c)) {
        continue;
      }
      IpFamily family = c.address().family();
      if (!ev.lbIps().containsKey(family) && es.network().isEmpty()) {
        skipped.add(new SkippedEndpoint(c.address().toString(), "the Service has no " + NodeFacts.familyName(family)
            + " LoadBalancer ingress IP and no network: not steered to host " + host + " (it would do nothing for it)"));
        continue;
      }
      Optional<IpPrefix> hostAddress = hostNode.flatMap(n -> NodeFacts.internalIp(n, family));
      if (hostAddress.isEmpty()) {
        String why = hostNode.isEmpty() ? "host " + host + " is not a known Node"
            : "host " + host + " has no " + NodeFacts.familyName(family) + " InternalIP";
        missing.add(why);
        skipped.add(new SkippedEndpoint(c.address().toString(), why + ": not steered (never guessed)"));
        unsteered++;
        continue;
      }
      OptionalLong table = steerTables.tableFor(host, hostNode.get().internalIps());
      parts.steerHosts.add(host);
      if (table.isEmpty()) {
        String why = "no free steering table (" + SteeringConfig.TABLES + " from --steer-table "
            + config.steering().firstTable() + " are in use)";
        missing.add(why);
        skipped.add(new SkippedEndpoint(c.address().toString(), why + ": not steered"));
        unsteered++;
        continue;
      }
      mine.add(new SteeredEndpoint(es.ref(), c.address(), host, hostAddress.get(), table.getAsLong()));
      parts.rules.add(serviceRule(config, c.address(), TableRef.of(table.getAsLong()), es.ref()));
    }
    if (mine.isEmpty() && unsteered == 0) {
      return notConfigured(es.ref(), "handled by node " + host + " (status.host)", skipped);
    }
    parts.steered.addAll(mine);
    if (mine.isEmpty()) {
      return notConfigured(es.ref(), Planner.NOT_STEERED + host + ": " + String.join("; ", missing), skipped);
    }
    StringBuilder reason = new StringBuilder("steers ").append(mine.size()).append(" endpoint(s) of this node to host ")
        .append(host).append(" (").append(mine.stream().map(e -> e.hostAddress().toString()).distinct().sorted()
            .collect(Collectors.joining(", "))).append(") over ").append(SteeringPlan.DEVICE)
        .append(": they leave there with ")
        .append(ev.lbIps().values().stream().map(IpPrefix::toString).collect(Collectors.joining(", ")));
    if (!missing.isEmpty()) {
      reason.append("; ").append(unsteered).append(" endpoint(s) not steered: ").append(String.join("; ", missing));
    }
    return new ServiceOutcome(es.ref(), true, reason.toString(), skipped, List.of(), mine, List.of());
  }

  static RuleSpec serviceRule(PlanConfig config, IpPrefix source, TableRef table, ObjectRef service) {
    return new RuleSpec(source.family(), config.priority(), Optional.of(source), Optional.empty(), table,
        Optional.of(service));
  }

  static ServiceOutcome notConfigured(ObjectRef ref, String reason, List<SkippedEndpoint> skipped) {
    return new ServiceOutcome(ref, false, reason, skipped, List.of());
  }
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.ServiceOutcome.SkippedEndpoint;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * The receiving side of a service on this node: its host's part (SNAT of the owned endpoints to the LoadBalancer
 * IP, the network's rules for sources, ClusterIPs and OVN-Kubernetes' masquerade IP), and a node's that only also
 * receives for a planned move (the endpoints other nodes steer to it).
 */
final class ReceivingSide {
  private final PlanConfig config;
  private final NodeFacts facts;
  private final NetworkResolution networks;

  ReceivingSide(PlanConfig config, NodeFacts facts, NetworkResolution networks) {
    this.config = config;
    this.facts = facts;
    this.networks = networks;
  }

  /** The host's part (and a receiving node's, for the endpoints it is given). */
  ServiceOutcome receive(EgressServiceInfo es, ServiceEvaluation ev, List<CandidateEndpoint> owned,
      List<SkippedEndpoint> skipped, ServiceDecider.Parts parts, boolean asHost) {
    boolean lbMode = es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP;
    Optional<TableRef> table = Optional.empty();
    if (!es.network().isEmpty()) {
      NetworkTables.TableOrFailure resolved = NetworkTables.resolve(es.network(), networks, config.steering());
      if (resolved.failure().isPresent()) {
        return ServiceDecider.notConfigured(es.ref(), resolved.failure().get(), skipped);
      }
      table = resolved.table();
    }

    List<RuleSpec> myRules = new ArrayList<>();
    List<SnatEntry> mySnat = new ArrayList<>();
    List<String> remote = new ArrayList<>();
    List<String> steeredIn = new ArrayList<>();
    List<TunnelSender> senders = new ArrayList<>();
    Set<String> moving = lbMode ? movingPeers(es) : Set.of();
    Set<IpFamily> families = new HashSet<>();
    for (CandidateEndpoint c : owned) {
      IpFamily family = c.address().family();
      if (lbMode) {
        IpPrefix lbIp = ev.lbIps().get(family);
        if (lbIp == null) {
          // As OVN-Kubernetes: only SNAT needs an LB IP of the family; the network still applies.
          if (table.isEmpty()) {
            skipped.add(new SkippedEndpoint(c.address().toString(),
                "the Service has no " + NodeFacts.familyName(family) + " LoadBalancer ingress IP: not SNATed"));
            continue;
          }
          skipped.add(new SkippedEndpoint(c.address().toString(),
              "the Service has no " + NodeFacts.familyName(family) + " LoadBalancer ingress IP: routed to table "
                  + table.get().name() + " but not SNATed (leaves with its own address)"));
        } else {
          mySnat.add(new SnatEntry(c.address(), lbIp, es.ref()));
        }
        // Without a nodeName, an endpoint outside this node's pod CIDRs is on the node whose CIDRs hold it, which
        // steers it here as well (isSteerLocal): the tunnel guard must know it as steered in.
        if (c.nodeName().map(n -> !n.equals(facts.nodeName())).orElseGet(() -> !facts.isLocal(c))) {
          // Its node steers it here when this node has an InternalIP of the family to steer to.
          boolean arrives = config.steering().steers() && facts.ownInternalIp(family).isPresent();
          (arrives ? steeredIn : remote).add(c.address().toString());
          if (arrives) {
            senders.addAll(sendersOf(c, Optional.ofNullable(lbIp), moving));
          }
        }
      } else if (!facts.isLocal(c)) {
        continue;
      }
      families.add(family);
      table.ifPresent(t -> myRules.add(ServiceDecider.serviceRule(config, c.address(), t, es.ref())));
    }
    // The ClusterIPs' and node ports' rules route the host's own traffic: a node that only also receives keeps its own.
    if (table.isPresent() && asHost) {
      for (String raw : ev.service().clusterIps()) {
        if (raw.isEmpty() || raw.equals("None")) {
          continue;
        }
        Optional<IpPrefix> cip = IpPrefix.tryParse(raw).filter(IpPrefix::isHost);
        if (cip.isEmpty()) {
          skipped.add(new SkippedEndpoint(raw, "ClusterIP is not a valid IP address"));
          continue;
        }
        myRules.add(ServiceDecider.serviceRule(config, cip.get(), table.get(), es.ref()));
      }
      myRules.addAll(etpLocalMasqueradeRules(ev, table.get(), es.ref()));
    }
    parts.rules.addAll(myRules);
    parts.snat.addAll(mySnat);
    parts.receivesSteered |= !steeredIn.isEmpty();
    parts.receiver |= lbMode;
    return new ServiceOutcome(es.ref(), true, describe(es, ev, table, mySnat.size(), myRules.size(), steeredIn.size()),
        skipped, remote, List.of(), steeredIn, senders.stream().distinct().sorted(TunnelSender.ORDER).toList());
  }

  /**
   * The other receiving nodes of a planned move under way (the also-receive annotation and {@code status.host},
   * without this node); empty when none is.
   */
  private Set<String> movingPeers(EgressServiceInfo es) {
    if (es.alsoReceive().isEmpty()) {
      return Set.of();
    }
    Set<String> out = new TreeSet<>();
    for (String n : es.alsoReceive().split(",")) {
      out.add(n.trim());
    }
    out.add(es.statusHost());
    out.remove("");
    out.remove(facts.nodeName());
    return out;
  }

  /**
   * Who may send a steered-in endpoint here: its own Node, from any of its InternalIPs of the endpoint's family (the
   * outer source the kernel picks for the route to this node). While a planned move is under way and that Node is
   * one of the other receiving nodes, the LB IP too (the old host's own pod's flows it SNATed before the move).
   */
  private List<TunnelSender> sendersOf(CandidateEndpoint c, Optional<IpPrefix> lbIp, Set<String> moving) {
    Optional<NodeInfo> node = facts.nodeOf(c);
    if (node.isEmpty()) {
      return List.of(); // no Node known to send it: nothing accepted for it
    }
    List<TunnelSender> out = new ArrayList<>();
    boolean handOver = lbIp.isPresent() && moving.contains(node.get().name());
    for (IpPrefix outer : NodeFacts.internalIps(node.get(), c.address().family())) {
      out.add(new TunnelSender(outer, c.address(), false));
      if (handOver) {
        out.add(new TunnelSender(outer, lbIp.get(), true));
      }
    }
    return out;
  }

  /**
   * OVN-Kubernetes' local gateway sends ETP=Local traffic for the LB to {@code <masquerade IP>:<nodePort>} and
   * on to the pod, so the reply's routing decision sees that address and port: one rule per node port and
   * family with an ingress IP, {@code from <masquerade IP> sport <nodePort>}, as OVN-Kubernetes adds.
   */
  private List<RuleSpec> etpLocalMasqueradeRules(ServiceEvaluation ev, TableRef table, ObjectRef service) {
    if (config.etpLocalMasqueradeIps().isEmpty()
        || !ServiceInfo.ETP_LOCAL.equals(ev.service().externalTrafficPolicy())) {
      return List.of();
    }
    List<RuleSpec> out = new ArrayList<>();
    for (IpPrefix masquerade : config.etpLocalMasqueradeIps()) {
      if (!ev.lbIps().containsKey(masquerade.family())) {
        continue;
      }
      for (int port : new TreeSet<>(ev.service().nodePorts())) {
        if (port > 0 && port <= 65535) {
          out.add(new RuleSpec(masquerade.family(), config.priority(), Optional.of(masquerade), Optional.empty(),
              table, Optional.of(service), OptionalLong.empty(), OptionalInt.of(port)));
        }
      }
    }
    return out;
  }

  private String describe(EgressServiceInfo es, ServiceEvaluation ev, Optional<TableRef> table, int snats, int ruleCount,
      int steeredIn) {
    StringBuilder sb = new StringBuilder();
    if (es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP) {
      sb.append("host of this service: SNAT of ").append(snats).append(" endpoint(s) to ")
          .append(ev.lbIps().values().stream().map(IpPrefix::toString).collect(Collectors.joining(", ")));
      if (steeredIn > 0) {
        sb.append(" (").append(steeredIn).append(" endpoint(s) on other nodes arrive steered over ")
            .append(SteeringPlan.DEVICE).append(')');
      }
    } else {
      sb.append("sourceIPBy Network (status.host ALL): local endpoints keep the network's source");
    }
    table.ifPresent(t -> {
      sb.append("; ").append(ruleCount).append(" source(s) routed to table ").append(t.name());
      if (!t.resolved()) {
        sb.append(" (a name: resolved on each node)");
      }
    });
    return sb.toString();
  }
}

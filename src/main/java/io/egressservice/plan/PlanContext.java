package io.egressservice.plan;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EndpointSliceInfo.Endpoint;
import io.egressservice.plan.ServiceOutcome.SkippedEndpoint;
import java.time.Instant;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;

/**
 * What one planning pass knows of the node (its Nodes, addresses, pod networks, configuration) and of the
 * cluster's Services and EndpointSlices, and the per-service half of the plan: {@link #plan} gives one
 * EgressService's part ({@link ServicePlan}). The full plan ({@link Planner}) and the incremental one
 * ({@link IncrementalPlanner}) both plan every service through it; only who owns a contested endpoint
 * ({@link Claims}) and which services are planned differ.
 */
final class PlanContext {
    /** Who owns an endpoint address that several EgressServices name: the oldest that tries to. */
    interface Claims {
      /** {@code service} claims {@code address}: null when it owns it, else the older owner. */
      ObjectRef claim(IpPrefix address, ObjectRef service);
    }

    private final NodeInputs in;
    private final PlanConfig config;
    private final Map<ObjectRef, ServiceInfo> services = new HashMap<>();
    private final Map<ObjectRef, List<EndpointSliceInfo>> slicesByService = new HashMap<>();
    private final Set<IpPrefix> nodeAddresses = new TreeSet<>();
    /** Addresses on this node's interfaces (observed), whether or not a Node object lists them. */
    private final Set<IpPrefix> localAddresses = new TreeSet<>();
    private final List<String> refusedInputs = new ArrayList<>();
    /** --service-cidr and --exclude-cidr, without a prefix that covers a whole family. */
    private final List<IpPrefix> otherInClusterPrefixes = new ArrayList<>();
    private final Map<IpFamily, List<IpPrefix>> podNetworks = new EnumMap<>(IpFamily.class);
    private final List<IpPrefix> localPodCidrs = new ArrayList<>();
    private final Map<String, NodeInfo> nodesByName = new HashMap<>();
    private final SteerTables steerTables;
    private final Set<IpPrefix> ownNodeAddresses = new HashSet<>();
    /** Every Node's InternalIPs: the only outer sources the steering port accepts. */
    private final Set<IpPrefix> nodeInternalIps = new TreeSet<>();
    private final LoadBalancerIps loadBalancerIps;

    PlanContext(NodeInputs in) {
      this.in = in;
      this.config = in.config();
      for (ServiceInfo s : in.services()) {
        services.put(s.ref(), s);
      }
      for (EndpointSliceInfo slice : in.endpointSlices()) {
        if (!slice.serviceName().isEmpty()) {
          slicesByService
              .computeIfAbsent(new ObjectRef(slice.ref().namespace(), slice.serviceName()), k -> new ArrayList<>())
              .add(slice);
        }
      }
      for (IpFamily f : IpFamily.values()) {
        podNetworks.put(f, new ArrayList<>());
      }
      steerTables = new SteerTables(config.steering(), in.existingSteerTables());
      for (NodeInfo node : in.nodes()) {
        nodesByName.putIfAbsent(node.name(), node);
        for (String a : node.addresses()) {
          IpPrefix.tryParse(a).filter(IpPrefix::isHost).ifPresent(nodeAddresses::add);
          if (node.name().equals(in.nodeName())) {
            IpPrefix.tryParse(a).filter(IpPrefix::isHost).ifPresent(ownNodeAddresses::add);
          }
        }
        for (String a : node.internalIps()) {
          IpPrefix.tryParse(a).filter(IpPrefix::isHost).ifPresent(nodeInternalIps::add);
        }
        for (String c : node.podCidrs()) {
          IpPrefix.tryParse(c).filter(p -> usableInClusterPrefix(p, "Node " + node.name() + " pod CIDR")).ifPresent(p -> {
            podNetworks.get(p.family()).add(p);
            if (node.name().equals(in.nodeName())) {
              localPodCidrs.add(p);
            }
          });
        }
      }
      for (IpPrefix p : config.clusterCidrs()) {
        if (usableInClusterPrefix(p, "--cluster-cidr")) {
          podNetworks.get(p.family()).add(p);
        }
      }
      for (IpPrefix p : config.serviceCidrs()) {
        if (usableInClusterPrefix(p, "--service-cidr")) {
          otherInClusterPrefixes.add(p);
        }
      }
      for (IpPrefix p : config.excludeCidrs()) {
        if (usableInClusterPrefix(p, "--exclude-cidr")) {
          otherInClusterPrefixes.add(p);
        }
      }
      for (IpPrefix a : in.localAddresses()) {
        if (a.isHost()) {
          localAddresses.add(a);
        }
      }
      loadBalancerIps = new LoadBalancerIps(in.services());
    }

    /**
     * An in-cluster prefix that covers a whole address family (0.0.0.0/0, ::/0) would exempt every
     * destination: every service silently without effect. It is refused, and said so.
     */
    private boolean usableInClusterPrefix(IpPrefix p, String what) {
      if (p.length() > 0) {
        return true;
      }
      refusedInputs.add(what + " " + p.cidrText() + " covers every " + familyName(p.family())
          + " address: ignored (as an in-cluster destination it would exempt all egress from every service)");
      return false;
    }

    /** One service's part of the plan as it is being built. */
    private static final class Parts {
      final List<RuleSpec> rules = new ArrayList<>();
      final List<SnatEntry> snat = new ArrayList<>();
      final List<SteeredEndpoint> steered = new ArrayList<>();
      final List<HeldEndpoint> held = new ArrayList<>();
      final Set<String> steerHosts = new TreeSet<>();
      boolean receivesSteered;
      /** This node holds the receiving side of the service (host, or also-receive). */
      boolean receiver;
    }

    PlanConfig config() {
      return config;
    }

    /** Who may send to the steering port (node-wide; read from the Nodes when the context is built). */
    SteeringPeers steeringPeers() {
      if (peers == null) {
        if (!config.steering().steers()) {
          peers = SteeringPeers.NONE;
        } else {
          // An InternalIP is a node address too, even where a Node lists it only as InternalIP.
          Set<IpPrefix> all = new TreeSet<>(nodeAddresses);
          all.addAll(nodeInternalIps);
          peers = new SteeringPeers(true, List.copyOf(nodeInternalIps), List.copyOf(all));
        }
      }
      return peers;
    }

    private SteeringPeers peers;

    String nodeName() {
      return in.nodeName();
    }

    /** Complete once the context is built (the node-wide inputs are read in the constructor). */
    List<String> refusedInputs() {
      if (refused == null) {
        refused = List.copyOf(refusedInputs);
      }
      return refused;
    }

    private List<String> refused;

    Map<Long, Long> existingMarks() {
      return in.existingMarks();
    }

    // The incremental planner keeps these in step with its inputs between full plans.
    void putService(ServiceInfo s) {
      ServiceInfo old = services.put(s.ref(), s);
      if (old != null) {
        loadBalancerIps.remove(old);
      }
      loadBalancerIps.add(s);
    }

    void removeService(ObjectRef ref) {
      ServiceInfo old = services.remove(ref);
      if (old != null) {
        loadBalancerIps.remove(old);
      }
    }

    /** The Services holding {@code ip} as a LoadBalancer ingress IP. */
    List<ServiceInfo> lbIpHolders(IpPrefix ip) {
      return loadBalancerIps.holdersOf(ip);
    }

    void setSlices(ObjectRef service, List<EndpointSliceInfo> slices) {
      if (slices.isEmpty()) {
        slicesByService.remove(service);
      } else {
        slicesByService.put(service, slices);
      }
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
    Evaluation evaluateSafely(EgressServiceInfo es) {
      try {
        return evaluate(es);
      } catch (RuntimeException e) {
        return Evaluation.refused("planning this service failed: " + e);
      }
    }

    /** The addresses the service tries to own, given its evaluation: what {@link #decide} claims. */
    List<IpPrefix> claimAttempts(Evaluation ev) {
      if (ev.notConfiguredReason().isPresent()) {
        if (config.steering().noHost() != NoHost.DROP) {
          return List.of();
        }
        List<IpPrefix> out = new ArrayList<>();
        for (CandidateEndpoint c : ev.endpoints()) {
          if (isSteerLocal(c)) {
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
    ServicePlan decide(EgressServiceInfo es, ServiceOrder order, Evaluation ev, Claims claims) {
      List<IpPrefix> attempts = claimAttempts(ev);
      Parts parts = new Parts();
      try {
        ServiceOutcome outcome = planService(es, ev, claims, parts);
        return ServicePlan.sourceMode(es.ref(), order, ev, attempts, outcome, parts.rules, parts.snat, parts.steered,
            parts.held, parts.receivesSteered, parts.steerHosts).receiving(parts.receiver);
      } catch (RuntimeException e) {
        // One object must not fail the node's plan: whatever this service's inputs hold, it is refused alone.
        return failed(es, order, ev, attempts, e);
      }
    }

    private ServicePlan failed(EgressServiceInfo es, ServiceOrder order, Evaluation ev, List<IpPrefix> attempts,
        RuntimeException e) {
      return ServicePlan.sourceMode(es.ref(), order, ev, attempts,
          notConfigured(es.ref(), "planning this service failed: " + e, List.of()), List.of(), List.of(), List.of(),
          List.of(), false, Set.of());
    }

    /**
     * {@code --no-host=drop}: this node's endpoints (not owned by an older service) of a service without a host
     * are held; returns how many.
     */
    private int hold(EgressServiceInfo es, List<CandidateEndpoint> endpoints, Claims claims, Parts parts) {
      if (config.steering().noHost() != NoHost.DROP) {
        return 0;
      }
      int n = 0;
      for (CandidateEndpoint c : endpoints) {
        if (isSteerLocal(c) && claims.claim(c.address(), es.ref()) == null) {
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

    private ServiceOutcome planService(EgressServiceInfo es, Evaluation ev, Claims claims, Parts parts) {
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
        return es.statusHost().equals(in.nodeName())
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

    /**
     * Mark mode: each network gets a mark. Marks the kernel already uses for a table are kept (stable across
     * restarts); new tables take the lowest free value; a table left without one (no free mark) is absent.
     */
    Map<Long, Long> allocateMarks(java.util.SortedSet<Long> tables) {
      Map<Long, Long> networkMarks = new HashMap<>();
      Set<Long> taken = new HashSet<>();
      for (long table : tables) {
        Long existing = in.existingMarks().get(table);
        if (existing != null && (existing & ~config.markMask()) == 0 && existing != 0 && taken.add(existing)) {
          networkMarks.put(table, existing);
        }
      }
      long next = 1;
      for (long table : tables) {
        if (networkMarks.containsKey(table)) {
          continue;
        }
        while (next <= config.maxMarkValue() && taken.contains(config.markOf(next))) {
          next++;
        }
        if (next > config.maxMarkValue()) {
          break;
        }
        taken.add(config.markOf(next));
        networkMarks.put(table, config.markOf(next));
      }
      return networkMarks;
    }

    /**
     * Mark mode: every per-source rule of the service becomes a mark entry (nftables marks the source's packets)
     * and its network's {@code fwmark <mark>/<mask> lookup <table>} rule, one per family and network for the
     * whole node (the oldest service's stands for all). The masquerade IP's rules stay rules.
     */
    ServicePlan withMarks(ServicePlan p, Map<Long, Long> networkMarks) {
      List<RuleSpec> out = new ArrayList<>();
      List<MarkEntry> marks = new ArrayList<>();
      Map<String, RuleSpec> perNetwork = new java.util.LinkedHashMap<>();
      ServiceOutcome outcome = p.sourceOutcome();
      for (RuleSpec r : p.sourceRules()) {
        if (r.sourcePort().isPresent()) {
          out.add(r); // a mark keyed by source address cannot hold the port
          continue;
        }
        long table = r.table().id().orElseThrow();
        Long mark = networkMarks.get(table);
        ObjectRef service = r.service().orElseThrow();
        if (mark == null) {
          outcome = new ServiceOutcome(service, false,
              "no free mark for table " + table + " in --mark-mask 0x" + Long.toHexString(config.markMask())
                  + " (" + config.maxMarkValue() + " networks at most)", outcome.skippedEndpoints(),
              outcome.remoteEndpoints());
          continue;
        }
        marks.add(new MarkEntry(r.from().orElseThrow(), table, mark, service));
        perNetwork.putIfAbsent(r.family() + "/" + table, new RuleSpec(r.family(), config.priority(), Optional.empty(),
            Optional.empty(), r.table(), Optional.empty(), OptionalLong.of(mark)));
      }
      return p.marked(outcome, out, marks, perNetwork);
    }

    /** Cluster-wide checks (the same on every node) and the service's usable endpoints. */
    Evaluation evaluate(EgressServiceInfo es) {
      if (es.malformed().isPresent()) {
        return Evaluation.refused("the EgressService is malformed (" + es.malformed().get() + "): nothing is applied"
            + " for it until it is fixed");
      }
      ServiceInfo svc = services.get(es.ref());
      if (svc == null) {
        return Evaluation.refused(
            "no Service " + es.ref() + ": an EgressService applies to the LoadBalancer Service of the same name");
      }
      if (!ServiceInfo.LOAD_BALANCER.equals(svc.type())) {
        return Evaluation.refused("Service type is " + svc.type() + ", not LoadBalancer");
      }
      List<SkippedEndpoint> skipped = new ArrayList<>();
      Map<IpFamily, IpPrefix> lbIps = new EnumMap<>(IpFamily.class);
      boolean lbMode = es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP;
      List<SkippedEndpoint> refusedLbIps = new ArrayList<>();
      for (ServiceInfo.Ingress ing : svc.ingress()) {
        if (ing.ip().isEmpty()) {
          continue;
        }
        Optional<IpPrefix> ip = IpPrefix.tryParse(ing.ip()).filter(IpPrefix::isHost);
        if (ip.isEmpty()) {
          skipped.add(new SkippedEndpoint(ing.ip(), "LoadBalancer ingress IP is not a valid address; ignored"));
          continue;
        }
        if (lbMode && !lbIps.containsKey(ip.get().family())) {
          Optional<String> problem = lbIpProblem(svc, ip.get());
          if (problem.isPresent()) {
            refusedLbIps.add(new SkippedEndpoint(ing.ip(), problem.get()));
            continue;
          }
        }
        lbIps.putIfAbsent(ip.get().family(), ip.get());
      }
      if (lbMode && lbIps.isEmpty() && refusedLbIps.isEmpty()) {
        String hostnames =
            svc.ingress().stream().map(ServiceInfo.Ingress::hostname).filter(h -> !h.isEmpty())
                .collect(Collectors.joining(", "));
        return Evaluation.refused(hostnames.isEmpty()
            ? "the Service has no LoadBalancer ingress IP yet"
            : "the Service's LoadBalancer ingress has only a hostname (" + hostnames + "): no IP to SNAT to");
      }
      String host = es.statusHost();
      if (host.isEmpty()) {
        String why = "not allocated: status.host is empty (no node chosen yet)";
        return lbMode ? Evaluation.held(why, svc, lbIps, endpointsOf(svc, skipped), skipped)
            : Evaluation.refused(why);
      }
      if (lbMode && host.equals(EgressServiceInfo.HOST_ALL)) {
        return Evaluation.refused(
            "status.host is ALL, which is for sourceIPBy: Network; waiting for the allocator to choose a node");
      }
      if (!lbMode && !host.equals(EgressServiceInfo.HOST_ALL)) {
        return Evaluation.refused(
            "status.host is '" + host + "' but sourceIPBy: Network needs ALL; waiting for the allocator");
      }
      if (!lbMode && es.network().isEmpty()) {
        return Evaluation.refused("sourceIPBy: Network without spec.network: nothing to do");
      }
      if (lbMode && lbIps.isEmpty()) {
        String reasons = refusedLbIps.stream().map(SkippedEndpoint::reason).collect(Collectors.joining("; "));
        return new Evaluation(Optional.empty(), Optional.of(reasons), svc, lbIps, List.of(), skipped);
      }
      // Another IP of the family is the source: the refused one is told among the skipped addresses.
      skipped.addAll(refusedLbIps);
      List<CandidateEndpoint> endpoints = endpointsOf(svc, skipped);
      return new Evaluation(Optional.empty(), Optional.empty(), svc, lbIps, endpoints, skipped);
    }

    /**
     * Why {@code ip} cannot be the service's egress source. The host's own Node address can: it is what the
     * node masquerades to anyway (k3s' servicelb gives Services the node addresses), and every Service on
     * the node may share it.
     */
    private Optional<String> lbIpProblem(ServiceInfo svc, IpPrefix ip) {
      if (ownNodeAddresses.contains(ip)) {
        return Optional.empty();
      }
      return loadBalancerIps.problem(svc, ip, nodeAddresses, inClusterPrefixes(ip.family()));
    }

    /** The pod-network endpoints of the service, deduplicated; everything else refused with a reason. */
    private List<CandidateEndpoint> endpointsOf(ServiceInfo service, List<SkippedEndpoint> skipped) {
      Map<IpPrefix, CandidateEndpoint> byAddress = new LinkedHashMap<>();
      EndpointTrust trust = config.endpointTrust();
      List<EndpointSliceInfo> slices = new ArrayList<>(slicesByService.getOrDefault(service.ref(), List.of()));
      slices.sort((a, b) -> a.ref().compareTo(b.ref()));
      for (EndpointSliceInfo slice : slices) {
        Optional<IpFamily> sliceFamily =
            switch (slice.addressType()) {
              case "IPv4" -> Optional.of(IpFamily.V4);
              case "IPv6" -> Optional.of(IpFamily.V6);
              default -> Optional.empty();
            };
        if (sliceFamily.isEmpty()) {
          skipped.add(new SkippedEndpoint(
              "EndpointSlice " + slice.ref(),
              "addressType " + (slice.addressType().isEmpty() ? "(none)" : slice.addressType())
                  + " is not supported: only IPv4 and IPv6 endpoints are handled"));
          continue;
        }
        // Refused before anything else, so an untrusted address claims nothing (see the oldest-wins rule).
        Optional<String> distrust = trust.sliceProblem(slice, Optional.of(service));
        if (distrust.isPresent()) {
          slice.endpoints().forEach(ep -> ep.addresses().forEach(a -> skipped.add(new SkippedEndpoint(a, distrust.get()))));
          continue;
        }
        for (Endpoint ep : slice.endpoints()) {
          Optional<String> foreign = trust.endpointProblem(slice, ep);
          if (foreign.isPresent()) {
            ep.addresses().forEach(a -> skipped.add(new SkippedEndpoint(a, foreign.get())));
            continue;
          }
          for (String raw : ep.addresses()) {
            Optional<IpPrefix> parsed = IpPrefix.tryParse(raw).filter(IpPrefix::isHost);
            if (parsed.isEmpty()) {
              skipped.add(new SkippedEndpoint(raw, "not a valid IP address"));
              continue;
            }
            IpPrefix address = parsed.get();
            if (address.family() != sliceFamily.get()) {
              skipped.add(new SkippedEndpoint(raw, "an " + address.family() + " address in an "
                  + slice.addressType() + " EndpointSlice (" + slice.ref() + ")"));
              continue;
            }
            if (nodeAddresses.contains(address)) {
              skipped.add(new SkippedEndpoint(raw,
                  "host-network endpoint (a Node address): the node's own traffic is never changed"));
              continue;
            }
            if (localAddresses.contains(address)) {
              skipped.add(new SkippedEndpoint(raw,
                  "an address of this node (on its interfaces, not in its Node object): the node's own traffic is never changed"));
              continue;
            }
            List<IpPrefix> pods = podNetworks.get(address.family());
            if (!pods.isEmpty() && !Cidrs.anyContains(pods, address)) {
              skipped.add(new SkippedEndpoint(raw,
                  "outside the pod CIDRs (a host-network endpoint?): never touched"));
              continue;
            }
            CandidateEndpoint candidate = new CandidateEndpoint(address, ep.nodeName());
            byAddress.merge(address, candidate, (a, b) -> a.nodeName().isPresent() ? a : b);
          }
        }
      }
      return new ArrayList<>(byAddress.values());
    }

    private ServiceOutcome actOnNode(
        EgressServiceInfo es,
        Evaluation ev,
        List<CandidateEndpoint> owned,
        List<SkippedEndpoint> skipped,
        Parts parts) {
      boolean lbMode = es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP;
      if (lbMode && !es.statusHost().equals(in.nodeName())) {
        if (!config.steering().steers()) {
          return notConfigured(es.ref(), "handled by node " + es.statusHost() + " (status.host)", skipped);
        }
        return es.alsoReceives(in.nodeName())
            ? steerAndReceive(es, ev, owned, skipped, parts)
            : steerToHost(es, ev, owned, skipped, parts);
      }
      return receive(es, ev, owned, skipped, parts, true);
    }

    /**
     * A node named by the also-receive annotation, not the host (a planned move): its own endpoints follow
     * {@code status.host} (steered there), while the endpoints other nodes steer are received and SNATed here as
     * on the host, so the steering nodes may switch to (or away from) this node at any moment without a gap.
     */
    private ServiceOutcome steerAndReceive(EgressServiceInfo es, Evaluation ev, List<CandidateEndpoint> owned,
        List<SkippedEndpoint> skipped, Parts parts) {
      List<CandidateEndpoint> local = owned.stream().filter(this::isSteerLocal).toList();
      List<CandidateEndpoint> others = owned.stream().filter(c -> !isSteerLocal(c)).toList();
      ServiceOutcome steering = steerToHost(es, ev, local, skipped, parts);
      ServiceOutcome receiving = receive(es, ev, others, skipped, parts, false);
      if (!receiving.configured()) {
        return receiving;
      }
      List<String> remote = new ArrayList<>(receiving.remoteEndpoints());
      remote.addAll(steering.remoteEndpoints());
      String reason = "also receives for host " + es.statusHost() + " (planned move, " + EgressServiceInfo.ALSO_RECEIVE_ANNOTATION
          + "): " + receiving.reason() + "; own endpoints: " + steering.reason();
      return new ServiceOutcome(es.ref(), true, reason, skipped, remote, steering.steeredEndpoints(),
          receiving.steeredIn());
    }

    /** The host's part (and a receiving node's, for the endpoints it is given). */
    private ServiceOutcome receive(EgressServiceInfo es, Evaluation ev, List<CandidateEndpoint> owned,
        List<SkippedEndpoint> skipped, Parts parts, boolean asHost) {
      boolean lbMode = es.sourceIpBy() == SourceIpBy.LOAD_BALANCER_IP;
      Optional<TableRef> table = Optional.empty();
      if (!es.network().isEmpty()) {
        TableOrFailure resolved = resolveNetwork(es.network());
        if (resolved.failure().isPresent()) {
          return notConfigured(es.ref(), resolved.failure().get(), skipped);
        }
        table = resolved.table();
      }

      List<RuleSpec> myRules = new ArrayList<>();
      List<SnatEntry> mySnat = new ArrayList<>();
      List<String> remote = new ArrayList<>();
      List<String> steeredIn = new ArrayList<>();
      Set<IpFamily> families = new HashSet<>();
      for (CandidateEndpoint c : owned) {
        IpFamily family = c.address().family();
        if (lbMode) {
          IpPrefix lbIp = ev.lbIps().get(family);
          if (lbIp == null) {
            // As OVN-Kubernetes: only SNAT needs an LB IP of the family; the network still applies.
            if (table.isEmpty()) {
              skipped.add(new SkippedEndpoint(c.address().toString(),
                  "the Service has no " + familyName(family) + " LoadBalancer ingress IP: not SNATed"));
              continue;
            }
            skipped.add(new SkippedEndpoint(c.address().toString(),
                "the Service has no " + familyName(family) + " LoadBalancer ingress IP: routed to table "
                    + table.get().name() + " but not SNATed (leaves with its own address)"));
          } else {
            mySnat.add(new SnatEntry(c.address(), lbIp, es.ref()));
          }
          // Without a nodeName, an endpoint outside this node's pod CIDRs is on the node whose CIDRs hold it, which
          // steers it here as well (isSteerLocal): the tunnel guard must know it as steered in.
          if (c.nodeName().map(n -> !n.equals(in.nodeName())).orElseGet(() -> !isLocal(c))) {
            // Its node steers it here when this node has an InternalIP of the family to steer to.
            boolean arrives = config.steering().steers() && ownInternalIp(family).isPresent();
            (arrives ? steeredIn : remote).add(c.address().toString());
          }
        } else if (!isLocal(c)) {
          continue;
        }
        families.add(family);
        table.ifPresent(t -> myRules.add(serviceRule(c.address(), t, es.ref())));
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
          myRules.add(serviceRule(cip.get(), table.get(), es.ref()));
        }
        myRules.addAll(etpLocalMasqueradeRules(ev, table.get(), es.ref()));
      }
      parts.rules.addAll(myRules);
      parts.snat.addAll(mySnat);
      parts.receivesSteered |= !steeredIn.isEmpty();
      parts.receiver |= lbMode;
      return new ServiceOutcome(es.ref(), true, describe(es, ev, table, mySnat.size(), myRules.size(), steeredIn.size()),
          skipped, remote, List.of(), steeredIn);
    }

    /**
     * OVN-Kubernetes' local gateway sends ETP=Local traffic for the LB to {@code <masquerade IP>:<nodePort>} and
     * on to the pod, so the reply's routing decision sees that address and port: one rule per node port and
     * family with an ingress IP, {@code from <masquerade IP> sport <nodePort>}, as OVN-Kubernetes adds.
     */
    private List<RuleSpec> etpLocalMasqueradeRules(Evaluation ev, TableRef table, ObjectRef service) {
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

    /**
     * A node that is not the host of a LoadBalancerIP service, with {@code --remote-endpoints=steer}: its
     * local endpoints go to the host's InternalIP of their family through a steering table (a rule per
     * source; marks in mark mode), and leave there with the LB IP. A family the host has no InternalIP of
     * is reported, never guessed.
     */
    private ServiceOutcome steerToHost(EgressServiceInfo es, Evaluation ev, List<CandidateEndpoint> owned,
        List<SkippedEndpoint> skipped, Parts parts) {
      String host = es.statusHost();
      Optional<NodeInfo> hostNode = Optional.ofNullable(nodesByName.get(host));
      List<SteeredEndpoint> mine = new ArrayList<>();
      Set<String> missing = new TreeSet<>();
      int unsteered = 0;
      for (CandidateEndpoint c : owned) {
        if (!isSteerLocal(c)) {
          continue;
        }
        IpFamily family = c.address().family();
        if (!ev.lbIps().containsKey(family) && es.network().isEmpty()) {
          skipped.add(new SkippedEndpoint(c.address().toString(), "the Service has no " + familyName(family)
              + " LoadBalancer ingress IP and no network: not steered to host " + host + " (it would do nothing for it)"));
          continue;
        }
        Optional<IpPrefix> hostAddress = hostNode.flatMap(n -> internalIp(n, family));
        if (hostAddress.isEmpty()) {
          String why = hostNode.isEmpty() ? "host " + host + " is not a known Node"
              : "host " + host + " has no " + familyName(family) + " InternalIP";
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
        parts.rules.add(serviceRule(c.address(), TableRef.of(table.getAsLong()), es.ref()));
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

    /** On a node that steers: its own endpoints, by nodeName, else by this node's pod CIDRs (never guessed). */
    private boolean isSteerLocal(CandidateEndpoint c) {
      if (c.nodeName().isPresent()) {
        return c.nodeName().get().equals(in.nodeName());
      }
      List<IpPrefix> own = localPodCidrs.stream().filter(p -> p.family() == c.address().family()).toList();
      return !own.isEmpty() && Cidrs.anyContains(own, c.address());
    }

    private Optional<IpPrefix> ownInternalIp(IpFamily family) {
      return Optional.ofNullable(nodesByName.get(in.nodeName())).flatMap(n -> internalIp(n, family));
    }

    private String describe(EgressServiceInfo es, Evaluation ev, Optional<TableRef> table, int snats, int ruleCount,
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

    private boolean isLocal(CandidateEndpoint c) {
      if (c.nodeName().isPresent()) {
        return c.nodeName().get().equals(in.nodeName());
      }
      // No nodeName: judge by this node's pod CIDRs; when unknown, act (as OVN-Kubernetes does): the
      // address can only originate on the node that hosts the pod, so a rule elsewhere is inert.
      List<IpPrefix> own = localPodCidrs.stream().filter(p -> p.family() == c.address().family()).toList();
      return own.isEmpty() || Cidrs.anyContains(own, c.address());
    }

    private TableOrFailure resolveNetwork(String network) {
      if (NetworkNames.isTableNumber(network)) {
        long id;
        try {
          id = Long.parseLong(network);
        } catch (NumberFormatException e) {
          id = -1;
        }
        if (id < 0 || id > 0xFFFFFFFFL) {
          return TableOrFailure.failed("network '" + network + "' is not a usable routing table id (1 to 4294967295)");
        }
        Optional<String> reserved = NetworkNames.reservedTable(id);
        if (reserved.isPresent()) {
          return TableOrFailure.failed("network '" + network + "' is " + reserved.get() + ", not an egress network");
        }
        return TableOrFailure.of(TableRef.of(id));
      }
      Optional<String> reservedName = NetworkNames.reservedName(network);
      if (reservedName.isPresent()) {
        return TableOrFailure.failed("network '" + network + "' is " + reservedName.get() + ", not an egress network");
      }
      OptionalLong id = in.networks().table(network);
      if (id.isPresent()) {
        Optional<String> reserved = NetworkNames.reservedTable(id.getAsLong());
        if (reserved.isPresent()) {
          return TableOrFailure.failed(
              "network '" + network + "' resolves to " + reserved.get() + ", not an egress network");
        }
        return TableOrFailure.of(new TableRef(id, network));
      }
      Optional<String> failure = in.networks().failure(network);
      if (failure.isPresent()) {
        return TableOrFailure.failed(failure.get());
      }
      if (in.networks().offline()) {
        return TableOrFailure.of(TableRef.unresolved(network));
      }
      return TableOrFailure.failed(
          "network '" + network + "' not found on this node: not a table number, a VRF device, or a name in"
              + " /etc/iproute2/rt_tables");
    }

    private RuleSpec serviceRule(IpPrefix source, TableRef table, ObjectRef service) {
      return new RuleSpec(source.family(), config.priority(), Optional.of(source), Optional.empty(), table,
          Optional.of(service));
    }

    private List<IpPrefix> inClusterPrefixes(IpFamily family) {
      List<IpPrefix> all = new ArrayList<>(podNetworks.get(family));
      otherInClusterPrefixes.stream().filter(p -> p.family() == family).forEach(all::add);
      return all;
    }

    /**
     * SNAT skips these destinations, and the service tables throw them back: in-cluster prefixes, every
     * Node address and every address of this node's interfaces, exactly (an external host on a node's
     * subnet is not in the cluster). Loopback and IPv6 link-local addresses are left out: they are never
     * routed through a table, and a node has a link-local address per pod veth on many CNIs (churn).
     */
    List<IpPrefix> inClusterSet() {
      List<IpPrefix> out = new ArrayList<>();
      for (IpFamily f : IpFamily.values()) {
        List<IpPrefix> all = new ArrayList<>(inClusterPrefixes(f));
        nodeAddresses.stream().filter(a -> a.family() == f).forEach(all::add);
        localAddresses.stream().filter(a -> a.family() == f && !isLoopback(a) && !LINK_LOCAL_V6.contains(a))
            .forEach(all::add);
        out.addAll(Cidrs.aggregate(all));
      }
      return out;
    }

    private static boolean isLoopback(IpPrefix a) {
      return a.family() == IpFamily.V4 ? LOOPBACK_V4.contains(a) : a.equals(LOOPBACK_V6);
    }

    /** The first InternalIP of the family of a Node: where steered traffic goes. */
    private static Optional<IpPrefix> internalIp(NodeInfo node, IpFamily family) {
      for (String raw : node.internalIps()) {
        Optional<IpPrefix> ip = IpPrefix.tryParse(raw).filter(IpPrefix::isHost).filter(p -> p.family() == family);
        if (ip.isPresent()) {
          return ip;
        }
      }
      return Optional.empty();
    }

    private static ServiceOutcome notConfigured(ObjectRef ref, String reason, List<SkippedEndpoint> skipped) {
      return new ServiceOutcome(ref, false, reason, skipped, List.of());
    }

    private static String familyName(IpFamily f) {
      return f == IpFamily.V4 ? "IPv4" : "IPv6";
    }

  private static final IpPrefix LOOPBACK_V4 = IpPrefix.parse("127.0.0.0/8");
  private static final IpPrefix LOOPBACK_V6 = IpPrefix.parse("::1");
  private static final IpPrefix LINK_LOCAL_V6 = IpPrefix.parse("fe80::/10");

  record CandidateEndpoint(IpPrefix address, Optional<String> nodeName) {}

  /** @param lbIpRefusal LoadBalancerIP mode: why none of the ingress IPs may be the source (the host reports it) */
  record Evaluation(
      Optional<String> notConfiguredReason,
      Optional<String> lbIpRefusal,
      ServiceInfo service,
      Map<IpFamily, IpPrefix> lbIps,
      List<CandidateEndpoint> endpoints,
      List<SkippedEndpoint> skipped) {
    /** Refused, but with the service's endpoints: a node may have to hold its own ones. */
    static Evaluation held(String reason, ServiceInfo service, Map<IpFamily, IpPrefix> lbIps,
        List<CandidateEndpoint> endpoints, List<SkippedEndpoint> skipped) {
      return new Evaluation(Optional.of(reason), Optional.empty(), service, lbIps, endpoints, skipped);
    }

    static Evaluation refused(String reason) {
      return new Evaluation(Optional.of(reason), Optional.empty(), new ServiceInfo(new ObjectRef("", ""), "", List.of(), List.of()),
          Map.of(), List.of(), List.of());
    }
  }

  private record TableOrFailure(Optional<TableRef> table, Optional<String> failure) {
    static TableOrFailure of(TableRef t) {
      return new TableOrFailure(Optional.of(t), Optional.empty());
    }

    static TableOrFailure failed(String reason) {
      return new TableOrFailure(Optional.empty(), Optional.of(reason));
    }
  }
}

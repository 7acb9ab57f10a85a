package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.EndpointTrust;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EndpointSliceInfo.Endpoint;
import io.egressservice.plan.ServiceOutcome.SkippedEndpoint;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * The per-service checks that come out the same on every node: the EgressService against its Service (type,
 * LoadBalancer ingress IPs, {@code status.host}) and the usable endpoints of its EndpointSlices (trusted, of the
 * pod network, not a node's own address). Holds the cluster's Services and slices by service; the incremental
 * planner keeps them in step with its inputs between full plans.
 */
final class ServiceEvaluator {
  private final PlanConfig config;
  private final NodeFacts facts;
  private final Map<ObjectRef, ServiceInfo> services = new HashMap<>();
  private final Map<ObjectRef, List<EndpointSliceInfo>> slicesByService = new HashMap<>();
  private final LoadBalancerIps loadBalancerIps;
  private final GrantPolicy grantPolicy;
  private final Map<String, NamespaceInfo> namespaces = new HashMap<>();
  private final HostLabels hostLabels;

  ServiceEvaluator(NodeInputs in, NodeFacts facts) {
    this.config = in.config();
    this.facts = facts;
    this.grantPolicy = in.grantPolicy();
    in.namespaces().forEach(this::putNamespace);
    this.hostLabels = HostLabels.of(in.egressServices());
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
    loadBalancerIps = new LoadBalancerIps(in.services());
  }

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

  void putNamespace(NamespaceInfo ns) {
    namespaces.put(ns.name(), ns);
  }

  void removeNamespace(String name) {
    namespaces.remove(name);
  }

  /** Keeps the host labels' holders in step; returns the other services that share the label of {@code es}. */
  List<ObjectRef> putEgressService(EgressServiceInfo es) {
    return hostLabels.put(es);
  }

  /** The same for a removed EgressService. */
  List<ObjectRef> removeEgressService(ObjectRef ref) {
    return hostLabels.remove(ref);
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

  /** Cluster-wide checks (the same on every node) and the service's usable endpoints. */
  ServiceEvaluation evaluate(EgressServiceInfo es) {
    if (es.malformed().isPresent()) {
      return ServiceEvaluation.refused("the EgressService is malformed (" + es.malformed().get() + "): nothing is applied"
          + " for it until it is fixed");
    }
    ServiceInfo svc = services.get(es.ref());
    Optional<String> refusal = clusterRefusal(es, svc);
    if (refusal.isPresent()) {
      return ServiceEvaluation.refused(refusal.get());
    }
    if (svc == null) {
      return ServiceEvaluation.refused(
          "no Service " + es.ref() + ": an EgressService applies to the LoadBalancer Service of the same name");
    }
    if (!ServiceInfo.LOAD_BALANCER.equals(svc.type())) {
      return ServiceEvaluation.refused("Service type is " + svc.type() + ", not LoadBalancer");
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
        // named as what it is, not as "no IP yet": a refused IP is the host node's to report (Event, log, explain)
        refusedLbIps.add(new SkippedEndpoint(ing.ip(), "LoadBalancer ingress IP " + TenantText.quoted(ing.ip())
            + " is not a valid IP address: not an egress source"));
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
      return ServiceEvaluation.refused(hostnames.isEmpty()
          ? "the Service has no LoadBalancer ingress IP yet"
          : "the Service's LoadBalancer ingress has only a hostname (" + hostnames + "): no IP to SNAT to");
    }
    String host = es.statusHost();
    if (host.isEmpty()) {
      String why = "not allocated: status.host is empty (no node chosen yet)";
      return lbMode ? ServiceEvaluation.held(why, svc, lbIps, endpointsOf(svc, skipped), skipped)
          : ServiceEvaluation.refused(why);
    }
    if (lbMode && host.equals(EgressServiceInfo.HOST_ALL)) {
      return ServiceEvaluation.refused(
          "status.host is ALL, which is for sourceIPBy: Network; waiting for the allocator to choose a node");
    }
    if (!lbMode && !host.equals(EgressServiceInfo.HOST_ALL)) {
      return ServiceEvaluation.refused(
          "status.host is '" + host + "' but sourceIPBy: Network needs ALL; waiting for the allocator");
    }
    if (!lbMode && es.network().isEmpty()) {
      return ServiceEvaluation.refused("sourceIPBy: Network without spec.network: nothing to do");
    }
    if (lbMode && lbIps.isEmpty()) {
      String reasons = refusedLbIps.stream().map(SkippedEndpoint::reason).collect(Collectors.joining("; "));
      return new ServiceEvaluation(Optional.empty(), Optional.of(reasons), svc, lbIps, List.of(), skipped);
    }
    // Another IP of the family is the source: the refused one is told among the skipped addresses.
    skipped.addAll(refusedLbIps);
    List<CandidateEndpoint> endpoints = endpointsOf(svc, skipped);
    return new ServiceEvaluation(Optional.empty(), Optional.empty(), svc, lbIps, endpoints, skipped);
  }

  /**
   * Why the service may be configured nowhere, whatever its endpoints: its network is not one any service may name,
   * its host label is an older service's, or the grants do not allow it. The allocator asks the same questions.
   */
  private Optional<String> clusterRefusal(EgressServiceInfo es, ServiceInfo svc) {
    Optional<String> network = NetworkNames.problem(es.network());
    if (network.isPresent()) {
      return network;
    }
    Optional<String> label = hostLabels.refusal(es.ref());
    if (label.isPresent()) {
      return label;
    }
    NamespaceInfo ns = namespaces.getOrDefault(es.ref().namespace(), NamespaceInfo.named(es.ref().namespace()));
    return grantPolicy.refusal(es.ref(), ns, es.network(), es.sourceIpBy(),
        svc == null ? List.of() : GrantPolicy.loadBalancerIps(svc));
  }

  /**
   * Why {@code ip} cannot be the service's egress source. The host's own Node address can: it is what the
   * node masquerades to anyway (k3s' servicelb gives Services the node addresses), and every Service on
   * the node may share it.
   */
  private Optional<String> lbIpProblem(ServiceInfo svc, IpPrefix ip) {
    if (facts.isOwnNodeAddress(ip)) {
      return Optional.empty();
    }
    return loadBalancerIps.problem(svc, ip, facts.nodeAddresses(), facts.inClusterPrefixes(ip.family()));
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
      Optional<String> distrust = TrustedEndpoints.sliceProblem(trust, slice, Optional.of(service));
      if (distrust.isPresent()) {
        slice.endpoints().forEach(ep -> ep.addresses().forEach(a -> skipped.add(new SkippedEndpoint(a, distrust.get()))));
        continue;
      }
      for (Endpoint ep : slice.endpoints()) {
        Optional<String> foreign = TrustedEndpoints.endpointProblem(slice, ep);
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
          if (facts.isNodeAddress(address)) {
            skipped.add(new SkippedEndpoint(raw,
                "host-network endpoint (a Node address): the node's own traffic is never changed"));
            continue;
          }
          if (facts.isLocalAddress(address)) {
            skipped.add(new SkippedEndpoint(raw,
                "an address of this node (on its interfaces, not in its Node object): the node's own traffic is never changed"));
            continue;
          }
          List<IpPrefix> pods = facts.podNetworks(address.family());
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
}

package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.ip.IpPrefix;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** Builds plan inputs the way a cluster would hold them, and reads the plan back as short lines. */
final class Fixture {
  static final String NS = "default";

  private final List<EgressServiceInfo> egressServices = new ArrayList<>();
  private final List<ServiceInfo> services = new ArrayList<>();
  private final List<EndpointSliceInfo> slices = new ArrayList<>();
  private final List<NodeInfo> nodes = new ArrayList<>();
  private final List<IpPrefix> localAddresses = new ArrayList<>();
  private final Map<String, Long> networkTables = new HashMap<>();
  private final Map<String, String> networkFailures = new HashMap<>();
  private boolean offline = false;
  private PlanConfig config = PlanConfig.defaults();
  private Map<Long, java.util.Set<IpPrefix>> existingSteerTables = Map.of();
  private GrantPolicy grantPolicy = GrantPolicy.off();
  private final List<NamespaceInfo> namespaces = new ArrayList<>();

  static Fixture cluster() {
    return new Fixture();
  }

  Fixture node(String name, List<String> addresses, String... podCidrs) {
    nodes.add(new NodeInfo(name, addresses, List.of(podCidrs)));
    return this;
  }

  /** A Node whose addresses are all InternalIPs (where other nodes steer to). */
  Fixture internalNode(String name, List<String> internalIps, String... podCidrs) {
    nodes.add(new NodeInfo(name, internalIps, List.of(podCidrs), internalIps));
    return this;
  }

  Fixture existingSteerTables(Map<Long, java.util.Set<IpPrefix>> tables) {
    existingSteerTables = Map.copyOf(tables);
    return this;
  }

  /** An EgressService in namespace default, created at second {@code createdSecond}. */
  Fixture egress(String name, SourceIpBy mode, String network, String host) {
    return egress(NS, name, mode, network, host, Optional.empty());
  }

  Fixture egress(String ns, String name, SourceIpBy mode, String network, String host, Optional<Instant> created) {
    egressServices.removeIf(e -> e.ref().equals(new ObjectRef(ns, name)));
    egressServices.add(new EgressServiceInfo(new ObjectRef(ns, name), created, mode, network, host));
    return this;
  }

  Fixture removeEgress(String name) {
    egressServices.removeIf(e -> e.ref().equals(new ObjectRef(NS, name)));
    return this;
  }

  /** A LoadBalancer Service with ClusterIPs and ingress IPs. */
  Fixture lbService(String name, List<String> clusterIps, String... ingressIps) {
    return service(NS, name, "LoadBalancer", clusterIps,
        Arrays.stream(ingressIps).map(ip -> new ServiceInfo.Ingress(ip, "")).toList());
  }

  Fixture service(String ns, String name, String type, List<String> clusterIps, List<ServiceInfo.Ingress> ingress) {
    services.removeIf(s -> s.ref().equals(new ObjectRef(ns, name)));
    services.add(new ServiceInfo(new ObjectRef(ns, name), type, clusterIps, ingress));
    return this;
  }

  /** The Service {@code name} (already added) with {@code externalTrafficPolicy} and these node ports. */
  Fixture trafficPolicy(String name, String externalTrafficPolicy, Integer... nodePorts) {
    ServiceInfo old = services.stream().filter(x -> x.ref().equals(new ObjectRef(NS, name))).findFirst().orElseThrow();
    services.remove(old);
    services.add(new ServiceInfo(old.ref(), old.type(), old.clusterIps(), old.ingress(), externalTrafficPolicy,
        List.of(nodePorts)));
    return this;
  }

  Fixture slice(String service, String sliceName, String addressType, EndpointSliceInfo.Endpoint... endpoints) {
    return slice(NS, service, sliceName, addressType, endpoints);
  }

  Fixture slice(String ns, String service, String sliceName, String addressType, EndpointSliceInfo.Endpoint... endpoints) {
    slices.removeIf(s -> s.ref().equals(new ObjectRef(ns, sliceName)));
    slices.add(new EndpointSliceInfo(new ObjectRef(ns, sliceName), service, addressType, List.of(endpoints)));
    return this;
  }

  /** Any Service, as given. */
  Fixture service(ServiceInfo s) {
    services.removeIf(o -> o.ref().equals(s.ref()));
    services.add(s);
    return this;
  }

  /** Any EndpointSlice, as given. */
  Fixture slice(EndpointSliceInfo s) {
    slices.removeIf(o -> o.ref().equals(s.ref()));
    slices.add(s);
    return this;
  }

  /** Any EgressService, as given. */
  Fixture egress(EgressServiceInfo e) {
    egressServices.removeIf(o -> o.ref().equals(e.ref()));
    egressServices.add(e);
    return this;
  }

  static EndpointSliceInfo.Endpoint ep(String address, String node) {
    return new EndpointSliceInfo.Endpoint(List.of(address), Optional.ofNullable(node));
  }

  /** Addresses the kernel shows on the node's interfaces (observed; not in any Node object). */
  Fixture localAddresses(String... addresses) {
    Arrays.stream(addresses).map(IpPrefix::parse).forEach(localAddresses::add);
    return this;
  }

  Fixture networkName(String name, long table) {
    networkTables.put(name, table);
    return this;
  }

  Fixture networkFailure(String name, String reason) {
    networkFailures.put(name, reason);
    return this;
  }

  Fixture offline() {
    offline = true;
    return this;
  }

  Fixture config(PlanConfig c) {
    config = c;
    return this;
  }

  Fixture noInClusterExclusion() {
    config = new PlanConfig(config.priority(), config.ruleProtocol(), config.clusterCidrs(), config.serviceCidrs(),
        config.excludeCidrs(), false);
    return this;
  }

  NodeInputs inputs(String nodeName) {
    return new NodeInputs(nodeName, egressServices, services, slices, nodes, localAddresses,
        new NetworkResolution(networkTables, networkFailures, offline), config, Map.of(), existingSteerTables)
        .withGrants(grantPolicy, namespaces);
  }

  /** An incremental planner for {@code nodeName} fed every object of this fixture (not planned yet). */
  IncrementalPlanner incremental(String nodeName) {
    NodeInputs in = inputs(nodeName);
    IncrementalPlanner planner = new IncrementalPlanner(nodeName, config);
    in.egressServices().forEach(planner::putEgressService);
    in.services().forEach(planner::putService);
    in.endpointSlices().forEach(planner::putSlice);
    in.nodes().forEach(planner::putNode);
    in.namespaces().forEach(planner::putNamespace);
    planner.setGrantPolicy(in.grantPolicy());
    return planner;
  }

  /** What an offline node shows: nothing. */
  static NodeObservations nothingObserved() {
    return new NodeObservations(List.of(), NetworkResolution.offlineResolution(), Map.of(), Map.of());
  }

  /** The EgressServicePolicy as the plan reads it (enforced or not). */
  Fixture grants(GrantPolicy policy) {
    grantPolicy = policy;
    return this;
  }

  /** A Namespace with these labels (alternating key, value). */
  Fixture namespace(String name, String... labels) {
    Map<String, String> l = new HashMap<>();
    for (int i = 0; i + 1 < labels.length; i += 2) {
      l.put(labels[i], labels[i + 1]);
    }
    namespaces.removeIf(n -> n.name().equals(name));
    namespaces.add(new NamespaceInfo(name, l));
    return this;
  }

  DesiredState plan(String nodeName) {
    return Planner.plan(inputs(nodeName));
  }

  // --- reading the plan back -------------------------------------------------------------------

  /** Service rules as "from 10.128.0.3 lookup 100 default/svc1" (family implied by the address). */
  static List<String> sourceRules(DesiredState s) {
    return s.rules().stream().filter(r -> r.service().isPresent() && r.sourcePort().isEmpty())
        .map(r -> r.priority() + ": from " + r.from().orElseThrow() + " lookup " + r.table().name() + " "
            + r.service().get())
        .toList();
  }

  /** Rules with a source port as "5000: from 169.254.169.3 sport 30300 lookup 100 default/svc". */
  static List<String> sportRules(DesiredState s) {
    return s.rules().stream().filter(r -> r.sourcePort().isPresent())
        .map(r -> r.priority() + ": from " + r.from().orElseThrow() + " sport " + r.sourcePort().getAsInt()
            + " lookup " + r.table().name() + " " + r.service().orElseThrow())
        .toList();
  }

  /** In-cluster rules as "4999: to 10.128.0.0/14 lookup main". */
  /** Rules with a destination (the P-1 form the agent no longer plans), as "4999: to X lookup main". */
  static List<String> inClusterRules(DesiredState s) {
    return s.rules().stream().filter(r -> r.to().isPresent())
        .map(r -> r.priority() + ": to " + r.to().orElseThrow() + " lookup " + r.table().name())
        .toList();
  }

  /** Throw routes as "throw 10.128.0.0/16 table 100" (hosts with /32 or /128). */
  static List<String> throwRoutes(DesiredState s) {
    return s.routes().stream().map(RouteSpec::toString).toList();
  }

  /** SNAT entries as "10.128.0.3 -> 5.5.5.5 default/svc1". */
  static List<String> snat(DesiredState s) {
    return s.snat().stream().map(e -> e.source() + " -> " + e.to() + " " + e.service()).toList();
  }

  static ServiceOutcome outcome(DesiredState s, String name) {
    return s.services().stream().filter(o -> o.service().name().equals(name)).findFirst().orElseThrow();
  }

  static List<String> skipped(DesiredState s, String name) {
    return outcome(s, name).skippedEndpoints().stream().map(e -> e.address() + ": " + e.reason()).toList();
  }
}

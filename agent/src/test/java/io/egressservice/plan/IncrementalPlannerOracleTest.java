package io.egressservice.plan;

import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.model.SteeringConfig;
import io.egressservice.model.RemoteEndpoints;
import io.egressservice.model.NoHost;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.EndpointSliceInfo.Endpoint;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.HashSet;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The incremental plan equals the full plan ({@link Planner#plan}, the oracle) of the same inputs after every
 * step of random sequences of changes: endpoints moving between services and nodes (claims, the older service
 * winning), services coming and going, LoadBalancer IPs shared across namespaces, hosts moving, Nodes changing,
 * networks appearing, in both rule modes (mark mode with masks of three marks and one, more networks than that,
 * and one network per namespace: the marks run out), with and without steering and --no-host=drop; Namespaces
 * relabelled and the EgressServicePolicy changing (grants of networks and LB IP ranges, missing, unreadable, off),
 * and services whose host labels collide ({@code ns1/s0-s1} and {@code ns1-s0/s1}).
 */
class IncrementalPlannerOracleTest {
  private static final String SELF = "node-a";
  private static final List<String> NODES = List.of("node-a", "node-b", "node-c");
  private static final List<String> NAMESPACES = List.of("ns1", "ns2", "ns1-s0");
  private static final List<String> NAMES = List.of("s0", "s1", "s2", "s3", "s4", "s5", "s0-s1");
  private static final List<String> NETWORKS =
      List.of("", "100", "blue", "0", "nowhere", "300", "4294967295", "7001", "bad name");
  /** Where the marks run out: more networks than marks, most of them usable. */
  private static final List<String> MANY_NETWORKS = List.of("100", "blue", "300", "400", "500", "600", "");
  private static final List<String> HOSTS = List.of("node-a", "node-a", "node-b", "node-c", "", "ALL", "node-x");
  private static final int STEPS = 250;

  static Stream<Arguments> configs() {
    PlanConfig base = PlanConfig.defaults().withCidrs(List.of(IpPrefix.parse("10.0.0.0/8")),
        List.of(IpPrefix.parse("172.30.0.0/16")), List.of());
    SteeringConfig steer = SteeringConfig.defaults();
    SteeringConfig report = new SteeringConfig(RemoteEndpoints.REPORT, SteeringConfig.DEFAULT_FIRST_TABLE,
        SteeringConfig.DEFAULT_PORT);
    SteeringConfig drop = new SteeringConfig(RemoteEndpoints.STEER, SteeringConfig.DEFAULT_FIRST_TABLE,
        SteeringConfig.DEFAULT_PORT, NoHost.DROP);
    List<Arguments> out = new ArrayList<>();
    long seed = 1;
    for (RuleMode mode : RuleMode.values()) {
      for (SteeringConfig s : List.of(steer, report, drop)) {
        for (long mask : List.of(PlanConfig.DEFAULT_MARK_MASK, 0x3L)) {
          if (mode == RuleMode.SOURCE && mask != PlanConfig.DEFAULT_MARK_MASK) {
            continue;
          }
          PlanConfig c = base.withRuleMode(mode, mask).withSteering(s)
              .withEtpLocalMasqueradeIps(List.of(IpPrefix.parse("169.254.169.3")));
          out.add(Arguments.of(mode + " " + s.mode() + " " + s.noHost() + " mask " + mask, c, seed++, NETWORKS));
          out.add(Arguments.of(mode + " " + s.mode() + " " + s.noHost() + " mask " + mask, c, seed++ * 7919,
              NETWORKS));
          if (mode == RuleMode.MARK && mask != PlanConfig.DEFAULT_MARK_MASK) {
            // More networks than marks, or one network per namespace: refused by the mask and by the limit, in turn.
            out.add(Arguments.of(mode + " " + s.mode() + " " + s.noHost() + " mask 1, many networks",
                c.withRuleMode(mode, 0x1L), seed++ * 104729, MANY_NETWORKS));
            out.add(Arguments.of(mode + " " + s.mode() + " " + s.noHost() + " mask " + mask + " 1 per namespace",
                c.withMarkNetworksPerNamespace(1), seed++ * 104729, MANY_NETWORKS));
          }
        }
      }
    }
    return out.stream();
  }

  @ParameterizedTest(name = "{0} seed {2}")
  @MethodSource("configs")
  void everyStepEqualsTheFullPlan(String name, PlanConfig config, long seed, List<String> networks) {
    Random random = new Random(seed);
    IncrementalPlanner planner = new IncrementalPlanner(SELF, config);
    for (String n : NODES) {
      planner.putNode(node(n, random));
    }
    NodeObservations node = observations(random);
    int incremental = 0;
    for (int step = 0; step < STEPS; step++) {
      String what = change(planner, random, networks);
      if (random.nextInt(40) == 0) {
        node = observations(random);
        what += "; node observations";
      }
      PlanDelta delta = planner.plan(node);
      DesiredState oracle = Planner.plan(planner.inputs(node));
      assertSame(oracle, delta.desired(), "step " + step + " (" + what + "), full=" + delta.full());
      assertEquals(PlanTotals.of(oracle), delta.totals(), "totals at step " + step + " (" + what + ")");
      assertPartsOfSomeServices(oracle, delta.desired(), random, "step " + step + " (" + what + ")");
      Set<ObjectRef> receivers = new java.util.HashSet<>();
      Planner.planFull(planner.inputs(node)).services().stream().filter(ServicePlan::receiver)
          .forEach(p -> receivers.add(p.service()));
      assertEquals(receivers, planner.receiving(), "services received for at step " + step + " (" + what + ")");
      if (!delta.full()) {
        incremental++;
        assertTrue(delta.servicesPlanned() <= NAMES.size() * NAMESPACES.size());
      }
    }
    assertTrue(incremental > STEPS / 3, "mostly incremental: " + incremental + " of " + STEPS);
  }

  private static String change(IncrementalPlanner planner, Random random, List<String> networks) {
    ObjectRef ref = new ObjectRef(pick(NAMESPACES, random), pick(NAMES, random));
    int kind = random.nextInt(100);
    if (kind < 40) {
      if (random.nextInt(8) == 0) {
        planner.removeSlice(sliceRef(ref, random.nextInt(2)));
        return "slice of " + ref + " removed";
      }
      planner.putSlice(slice(ref, random.nextInt(2), random));
      return "slice of " + ref;
    }
    if (kind < 60) {
      if (random.nextInt(6) == 0) {
        planner.removeService(ref);
        return "service " + ref + " removed";
      }
      planner.putService(service(ref, random));
      return "service " + ref;
    }
    if (kind < 85) {
      if (random.nextInt(6) == 0) {
        planner.removeEgressService(ref);
        return "egress service " + ref + " removed";
      }
      planner.putEgressService(egressService(ref, random, networks));
      return "egress service " + ref;
    }
    if (kind < 90) {
      String n = pick(NODES, random);
      planner.putNode(node(n, random));
      return "node " + n;
    }
    if (kind < 93) {
      String ns = pick(NAMESPACES, random);
      if (random.nextInt(4) == 0) {
        planner.removeNamespace(ns);
        return "namespace " + ns + " removed";
      }
      planner.putNamespace(new NamespaceInfo(ns, Map.of("tier", pick(List.of("a", "b"), random))));
      return "namespace " + ns + " relabelled";
    }
    if (kind < 95) {
      GrantPolicy p = policy(random);
      planner.setGrantPolicy(p);
      return "policy " + p;
    }
    // a slice of no service, or one labelled for another: moves endpoints between services
    planner.putSlice(new EndpointSliceInfo(sliceRef(ref, 2), random.nextBoolean() ? "" : pick(NAMES, random), "IPv4",
        List.of(endpoint(random))));
    return "stray slice in " + ref.namespace();
  }

  private static GrantPolicy policy(Random random) {
    Grant tierA = new Grant(new LabelMatcher(Map.of("tier", "a"), List.of()), List.of("100", "blue", "7001"),
        random.nextBoolean() ? Optional.empty() : Optional.of(List.of(IpPrefix.parse("5.5.5.0/31"))));
    Grant ns2 = new Grant(new LabelMatcher(Map.of(), List.of(new LabelMatcher.Expression(NamespaceInfo.NAME_LABEL,
        LabelMatcher.Operator.IN, Set.of("ns2")))), List.of("300"), Optional.empty());
    return switch (random.nextInt(5)) {
      case 0 -> GrantPolicy.off();
      case 1 -> GrantPolicy.off().enforced(true);
      case 2 -> GrantPolicy.unreadable("spec.grants is not a list").enforced(true);
      case 3 -> GrantPolicy.of(List.of(tierA)).enforced(true);
      default -> GrantPolicy.of(List.of(tierA, ns2)).enforced(random.nextInt(4) != 0);
    };
  }

  private static EgressServiceInfo egressService(ObjectRef ref, Random random, List<String> networks) {
    Optional<Instant> created = random.nextInt(5) == 0 ? Optional.empty()
        : Optional.of(Instant.parse("2026-01-01T00:00:00Z").plusSeconds(random.nextInt(4)));
    SourceIpBy mode = random.nextInt(4) == 0 ? SourceIpBy.NETWORK : SourceIpBy.LOAD_BALANCER_IP;
    if (random.nextInt(30) == 0) {
      return new EgressServiceInfo(ref, created, mode, "", pick(HOSTS, random), Optional.of("spec is not an object"));
    }
    if (networks == MANY_NETWORKS && random.nextBoolean()) {
      // Crowded: services that need a mark on every node (their ClusterIP's) and nothing else to be configured.
      return new EgressServiceInfo(ref, created, SourceIpBy.NETWORK, pick(networks, random), "ALL", Optional.empty());
    }
    // A planned move names a node that also receives: now and then, any of them (the host itself too).
    String alsoReceive = switch (random.nextInt(6)) {
      case 0 -> pick(HOSTS, random);
      case 1 -> pick(HOSTS, random) + "," + pick(HOSTS, random);
      default -> "";
    };
    return new EgressServiceInfo(ref, created, mode, pick(networks, random), pick(HOSTS, random), Optional.empty(),
        alsoReceive);
  }

  private static ServiceInfo service(ObjectRef ref, Random random) {
    List<ServiceInfo.Ingress> ingress = new ArrayList<>();
    int n = random.nextInt(3);
    for (int i = 0; i < n; i++) {
      ingress.add(new ServiceInfo.Ingress(pick(List.of("5.5.5.1", "5.5.5.2", "5.5.5.3", "fd00::5", "192.168.0.2",
          "127.0.0.1", "not-an-ip", ""), random), random.nextInt(5) == 0 ? "lb.example" : ""));
    }
    String type = random.nextInt(6) == 0 ? "ClusterIP" : ServiceInfo.LOAD_BALANCER;
    List<String> clusterIps = List.of("172.30.0." + random.nextInt(6));
    Optional<Instant> created = random.nextInt(4) == 0 ? Optional.empty()
        : Optional.of(Instant.parse("2025-01-01T00:00:00Z").plusSeconds(random.nextInt(3)));
    return new ServiceInfo(ref, type, clusterIps, ingress, random.nextBoolean() ? "Local" : "Cluster",
        random.nextBoolean() ? List.of(30000 + random.nextInt(3)) : List.of(), random.nextInt(8) != 0, created);
  }

  private static ObjectRef sliceRef(ObjectRef service, int i) {
    return new ObjectRef(service.namespace(), service.name() + "-" + i);
  }

  private static EndpointSliceInfo slice(ObjectRef service, int i, Random random) {
    List<Endpoint> endpoints = new ArrayList<>();
    int n = random.nextInt(4);
    for (int e = 0; e < n; e++) {
      endpoints.add(endpoint(random));
    }
    return new EndpointSliceInfo(sliceRef(service, i), service.name(), "IPv4", endpoints);
  }

  private static Endpoint endpoint(Random random) {
    // a small pool, so services share endpoints (claims) and endpoints move between nodes
    String address = "10." + (1 + random.nextInt(3)) + ".0." + (1 + random.nextInt(4));
    Optional<String> nodeName = random.nextInt(5) == 0 ? Optional.empty() : Optional.of(pick(NODES, random));
    return new Endpoint(List.of(address), nodeName);
  }

  private static NodeInfo node(String name, Random random) {
    int i = NODES.indexOf(name) + 1;
    List<String> internal = random.nextInt(6) == 0 ? List.of() : List.of("192.168.0." + i);
    List<String> addresses = new ArrayList<>(internal);
    if (random.nextBoolean()) {
      addresses.add("203.0.113." + i);
    }
    List<String> pods = random.nextInt(8) == 0 ? List.of() : List.of("10." + i + ".0.0/24");
    return new NodeInfo(name, addresses, pods, internal);
  }

  private static NodeObservations observations(Random random) {
    List<IpPrefix> local = random.nextBoolean() ? List.of(IpPrefix.parse("192.168.0.1"))
        : List.of(IpPrefix.parse("192.168.0.1"), IpPrefix.parse("10.1.0.4"));
    Map<String, Long> tables = random.nextBoolean() ? Map.of("blue", 200L, "300", 300L) : Map.of("blue", 200L);
    Map<Long, Long> marks = random.nextBoolean() ? Map.of() : Map.of(200L, 2L);
    Map<Long, Set<IpPrefix>> steer = random.nextBoolean() ? Map.of()
        : Map.of(SteeringConfig.DEFAULT_FIRST_TABLE + 1, Set.of(IpPrefix.parse("192.168.0.3")));
    return new NodeObservations(local, new NetworkResolution(tables, Map.of(), false), marks, steer);
  }

  private static <T> T pick(List<T> list, Random random) {
    return list.get(random.nextInt(list.size()));
  }

  /** Equal but for the order of the lists (an incremental plan's are in no particular order). */
  /**
   * {@link ServiceParts#split} of the incremental plan's views (which read only the given services' parts and the
   * tail) holds what filtering the oracle's plain lists holds, for a random set of services.
   */
  private static void assertPartsOfSomeServices(DesiredState want, DesiredState got, Random random, String when) {
    Set<ObjectRef> some = new HashSet<>();
    for (String ns : NAMESPACES) {
      for (String n : NAMES) {
        if (random.nextBoolean()) {
          some.add(new ObjectRef(ns, n));
        }
      }
    }
    ServiceParts.Split<RuleSpec> w = ServiceParts.split(want.rules(), some, RuleSpec::service);
    ServiceParts.Split<RuleSpec> g = ServiceParts.split(got.rules(), some, RuleSpec::service);
    assertEquals(sorted(w.ofServices()), sorted(g.ofServices()), when + ": rules of " + some);
    assertEquals(sorted(w.ofNoService()), sorted(g.ofNoService()), when + ": rules of no service");
    assertEquals(sorted(ServiceParts.of(want.snat(), some, SnatEntry::service)),
        sorted(ServiceParts.of(got.snat(), some, SnatEntry::service)), when + ": snat");
    assertEquals(sorted(ServiceParts.of(want.marks(), some, MarkEntry::service)),
        sorted(ServiceParts.of(got.marks(), some, MarkEntry::service)), when + ": marks");
    assertEquals(sorted(ServiceParts.of(want.held(), some, HeldEndpoint::service)),
        sorted(ServiceParts.of(got.held(), some, HeldEndpoint::service)), when + ": held");
    assertEquals(sorted(ServiceParts.of(want.steering().endpoints(), some, SteeredEndpoint::service)),
        sorted(ServiceParts.of(got.steering().endpoints(), some, SteeredEndpoint::service)), when + ": steered");
  }

  private static void assertSame(DesiredState want, DesiredState got, String when) {
    assertEquals(want.node(), got.node(), when);
    assertEquals(want.priority(), got.priority(), when);
    assertEquals(want.ruleMode(), got.ruleMode(), when);
    assertEquals(want.markMask(), got.markMask(), when);
    assertEquals(sorted(want.services()), sorted(got.services()), when + ": outcomes");
    assertEquals(sorted(want.rules()), sorted(got.rules()), when + ": rules");
    assertEquals(sorted(want.snat()), sorted(got.snat()), when + ": snat");
    assertEquals(sorted(want.marks()), sorted(got.marks()), when + ": marks");
    assertEquals(want.networkMarks(), got.networkMarks(), when + ": network marks");
    assertEquals(sorted(want.inCluster()), sorted(got.inCluster()), when + ": in-cluster");
    assertEquals(sorted(want.routes()), sorted(got.routes()), when + ": routes");
    assertEquals(want.refusedInputs(), got.refusedInputs(), when + ": refused inputs");
    assertEquals(sorted(want.steering().endpoints()), sorted(got.steering().endpoints()), when + ": steered");
    assertEquals(sorted(want.steering().routes()), sorted(got.steering().routes()), when + ": steer routes");
    assertEquals(want.steering().receives(), got.steering().receives(), when + ": receives");
    assertEquals(sorted(want.held()), sorted(got.held()), when + ": held");
    assertEquals(want.rules().size(), got.rules().size(), when);
  }

  private static <T> List<String> sorted(List<T> list) {
    List<String> out = new ArrayList<>();
    list.forEach(e -> out.add(e.toString()));
    out.sort(Comparator.naturalOrder());
    return out;
  }
}

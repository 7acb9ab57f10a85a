package io.egressservice.dataplane;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.HeldEndpoint;
import io.egressservice.plan.MarkEntry;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.RouteSpec;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.SnatEntry;
import io.egressservice.plan.SteerRoute;
import io.egressservice.plan.SteeredEndpoint;
import io.egressservice.model.SteeringConfig;
import io.egressservice.plan.SteeringPlan;
import io.egressservice.plan.TableRef;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Random;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/**
 * The fast path ({@link Dataplane#reconcileChanged}) against the full reconcile, on the real kernel: two
 * namespaces get the same random sequence of per-service changes, one through each path, and iproute2 and nft
 * must show the same owned state after every step; the fast path makes no dump and no nft listing.
 */
class DataplaneFastPathNetnsTest {
  static final int PRIORITY = 5000;
  static final int PROTOCOL = 201;
  static final long STEER_TABLE = 4000;
  static final List<IpPrefix> IN_CLUSTER = List.of(IpPrefix.parse("10.96.0.0/12"), IpPrefix.parse("10.244.0.0/16"));
  static final long[] TABLES = {100, 101};

  Netns fastNs;
  Netns fullNs;
  Dataplane fast;
  Dataplane full;

  @BeforeEach
  void setUp() {
    Privileges.assumeNetAdmin();
    fastNs = Netns.create("dltf");
    fullNs = Netns.create("dltr");
    fast = Dataplane.open(LinuxKernel.open(Optional.of(fastNs.name())), PRIORITY, PROTOCOL);
    full = Dataplane.open(LinuxKernel.open(Optional.of(fullNs.name())), PRIORITY, PROTOCOL);
  }

  @AfterEach
  void tearDown() {
    for (AutoCloseable c : new AutoCloseable[] {fast, full, fastNs, fullNs}) {
      try {
        if (c != null) {
          c.close();
        }
      } catch (Exception e) {
        // best effort
      }
    }
  }

  /** How one endpoint of a service leaves the node. */
  enum Treatment { SNAT, STEER, HELD }

  /** A synthetic service: its table, LB IP and endpoints (source to treatment). */
  record Service(long table, IpPrefix lb, Map<IpPrefix, Treatment> endpoints) {}

  static ObjectRef ref(int i) {
    return new ObjectRef("ns" + (i % 2), "svc" + i);
  }

  static IpPrefix endpoint(int service, int n) {
    return IpPrefix.parse("10.244." + service + "." + (n + 1));
  }

  /** The state a planner would make of these services (sorted lists, node-wide parts fixed). */
  static DesiredState state(Map<Integer, Service> services, RuleMode mode, List<IpPrefix> inCluster) {
    List<RuleSpec> rules = new ArrayList<>();
    List<SnatEntry> snat = new ArrayList<>();
    List<MarkEntry> marks = new ArrayList<>();
    List<SteeredEndpoint> steered = new ArrayList<>();
    List<HeldEndpoint> held = new ArrayList<>();
    Map<Long, Long> networkMarks = new TreeMap<>();
    if (mode == RuleMode.MARK) {
      networkMarks.put(100L, 0x01000000L);
      networkMarks.put(101L, 0x02000000L);
      networkMarks.put(STEER_TABLE, 0x03000000L);
      networkMarks.forEach((t, m) -> rules.add(new RuleSpec(IpFamily.V4, PRIORITY, Optional.empty(), Optional.empty(),
          TableRef.of(t), Optional.empty(), OptionalLong.of(m))));
    }
    services.forEach((i, s) -> s.endpoints().forEach((src, t) -> {
      ObjectRef svc = ref(i);
      long table = t == Treatment.STEER ? STEER_TABLE : s.table();
      if (t == Treatment.HELD) {
        held.add(new HeldEndpoint(svc, src));
        return;
      }
      if (mode == RuleMode.MARK) {
        marks.add(new MarkEntry(src, table, networkMarks.get(table), svc));
      } else {
        rules.add(new RuleSpec(IpFamily.V4, PRIORITY, Optional.of(src), Optional.empty(), TableRef.of(table),
            Optional.of(svc)));
      }
      if (t == Treatment.SNAT) {
        snat.add(new SnatEntry(src, s.lb(), svc));
      } else {
        steered.add(new SteeredEndpoint(svc, src, "node-b", IpPrefix.parse("192.168.50.2"), STEER_TABLE));
      }
    }));
    List<RouteSpec> routes = new ArrayList<>();
    for (long t : TABLES) {
      for (IpPrefix p : inCluster) {
        routes.add(new RouteSpec(IpFamily.V4, TableRef.of(t), p));
      }
    }
    rules.sort(RuleSpec.ORDER);
    snat.sort(SnatEntry.ORDER);
    marks.sort(MarkEntry.ORDER);
    steered.sort(SteeredEndpoint.ORDER);
    held.sort(HeldEndpoint.ORDER);
    SteeringPlan steering = new SteeringPlan(steered,
        List.of(new SteerRoute(IpFamily.V4, STEER_TABLE, "node-b", IpPrefix.parse("192.168.50.2"))), false,
        SteeringConfig.DEFAULT_PORT);
    return DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL).rules(rules).snat(snat)
        .inCluster(inCluster).ruleMode(mode).markMask(PlanConfig.DEFAULT_MARK_MASK)
        .marks(marks).networkMarks(networkMarks).routes(routes)
        .steering(steering).held(held).build();
  }

  static Map<Integer, Service> initial(Random random, int count) {
    Map<Integer, Service> out = new TreeMap<>();
    for (int i = 0; i < count; i++) {
      Map<IpPrefix, Treatment> eps = new TreeMap<>();
      for (int n = 0; n < 3; n++) {
        eps.put(endpoint(i, n), Treatment.SNAT);
      }
      out.put(i, new Service(TABLES[i % 2], IpPrefix.parse("192.0.2." + (10 + i)), eps));
    }
    return out;
  }

  /** One random change to service {@code i}: an endpoint more or less, a treatment, its LB IP or its table. */
  static Service mutate(Service s, int i, Random random) {
    Map<IpPrefix, Treatment> eps = new TreeMap<>(s.endpoints());
    switch (random.nextInt(6)) {
      case 0 -> eps.put(endpoint(i, 10 + random.nextInt(20)), Treatment.SNAT);
      case 1 -> {
        if (!eps.isEmpty()) {
          eps.remove(new ArrayList<>(eps.keySet()).get(random.nextInt(eps.size())));
        }
      }
      case 2 -> {
        if (!eps.isEmpty()) {
          IpPrefix p = new ArrayList<>(eps.keySet()).get(random.nextInt(eps.size()));
          eps.put(p, Treatment.values()[random.nextInt(3)]);
        }
      }
      case 3 -> {
        // the whole service without a host, or back
        Treatment t = eps.containsValue(Treatment.HELD) ? Treatment.SNAT : Treatment.HELD;
        eps.replaceAll((k, v) -> t);
      }
      case 4 -> {
        return new Service(s.table(), IpPrefix.parse("192.0.2." + (100 + random.nextInt(50))), eps);
      }
      default -> {
        return new Service(s.table() == 100 ? 101 : 100, s.lb(), eps);
      }
    }
    return new Service(s.table(), s.lb(), eps);
  }

  @Test
  void randomPerServiceChangesGiveTheKernelStateOfTheFullReconcileInSourceMode() {
    randomSequence(RuleMode.SOURCE, 11);
  }

  @Test
  void randomPerServiceChangesGiveTheKernelStateOfTheFullReconcileInMarkMode() {
    randomSequence(RuleMode.MARK, 23);
  }

  private void randomSequence(RuleMode mode, long seed) {
    Random random = new Random(seed);
    Map<Integer, Service> services = initial(random, 6);
    DesiredState current = state(services, mode, IN_CLUSTER);
    assertThat(fast.reconcile(current).failures()).isEmpty();
    assertThat(full.reconcile(current).failures()).isEmpty();
    assertSameKernelState();

    long dumps = ((LinuxKernel) fast.kernel()).netlink().dumpRequests();
    long snatListings = fast.nftObserveStats().listings();
    long markListings = fast.markObserveStats().listings();
    for (int step = 0; step < 30; step++) {
      Set<ObjectRef> changed = new HashSet<>();
      int touched = 1 + random.nextInt(2);
      for (int k = 0; k < touched; k++) {
        int i = random.nextInt(7); // 6 is a service that comes and goes
        Service s = services.get(i);
        if (s == null) {
          services.put(i, new Service(100, IpPrefix.parse("192.0.2.99"), new TreeMap<>(Map.of(endpoint(i, 0),
              Treatment.SNAT))));
        } else if (i == 6 && random.nextBoolean()) {
          services.remove(i);
        } else {
          services.put(i, mutate(s, i, random));
        }
        changed.add(ref(i));
      }
      DesiredState next = state(services, mode, IN_CLUSTER);

      ApplyReport viaFast = fast.reconcileChanged(current, next, changed);
      ApplyReport viaFull = full.reconcile(next);

      assertThat(viaFast.failures()).as("step %d", step).isEmpty();
      assertThat(viaFull.failures()).as("step %d", step).isEmpty();
      assertSameKernelState();
      current = next;
    }
    assertThat(fast.fastPathStats().fallbacks()).as("nothing node-wide changed").isZero();
    assertThat(((LinuxKernel) fast.kernel()).netlink().dumpRequests()).as("no rule, route, link or address dump").isEqualTo(dumps);
    assertThat(fast.nftObserveStats().listings()).as("no listing of the SNAT part").isEqualTo(snatListings);
    assertThat(fast.markObserveStats().listings()).as("no listing of the mark part").isEqualTo(markListings);

    // The kernel and the listing caches are what a full observation says: a full reconcile has nothing to do.
    assertThat(fast.reconcile(current).applied()).isEmpty();
    ChangeSet left = Differ.diff(current, fast.observe());
    assertThat(left.isEmpty()).as("%s %s", left.changes(), left.markCommands()).isTrue();
    assertThat(ServiceSlices.expectedObservation(current, ReversePath.State.NONE, true).rules())
        .containsExactlyInAnyOrderElementsOf(fast.observe().rules());
  }

  /** {@code s} with a ClusterIP rule of {@code service}: a source without SNAT entry, like a steered endpoint's. */
  static DesiredState withClusterIp(DesiredState s, ObjectRef service, String clusterIp) {
    List<RuleSpec> rules = new ArrayList<>(s.rules());
    rules.add(new RuleSpec(IpFamily.V4, PRIORITY, Optional.of(IpPrefix.parse(clusterIp)), Optional.empty(),
        TableRef.of(100), Optional.of(service)));
    rules.sort(RuleSpec.ORDER);
    return DesiredState.builder().node(s.node()).priority(s.priority()).ruleProtocol(s.ruleProtocol()).rules(rules)
        .snat(s.snat()).inCluster(s.inCluster()).services(s.services()).ruleMode(s.ruleMode())
        .markMask(s.markMask()).marks(s.marks()).networkMarks(s.networkMarks()).routes(s.routes())
        .refusedInputs(s.refusedInputs()).steering(s.steering()).held(s.held()).build();
  }

  /** The labels of the rule deletions a reconcile applied, by rule. */
  static Map<String, String> deletedRuleLabels(ApplyReport report) {
    Map<String, String> out = new TreeMap<>();
    report.applied().stream().filter(c -> c.kind() == Change.Kind.RULE && c.op() == Change.Op.DELETE)
        .forEach(c -> out.put(c.description(), c.service()));
    return out;
  }

  @Test
  void rulesDeletedWithTheirServiceAreLabelledWithItEvenWithoutSnatEntryOnBothPaths() {
    // Service 0 has a SNAT endpoint, a steered one (its rule looks up the steering table, no SNAT entry here) and
    // a ClusterIP rule (no SNAT entry either); deleting the service must name it on every rule it removes.
    Map<Integer, Service> services = new TreeMap<>();
    services.put(0, new Service(100, IpPrefix.parse("192.0.2.10"),
        new TreeMap<>(Map.of(endpoint(0, 0), Treatment.SNAT, endpoint(0, 1), Treatment.STEER))));
    services.put(1, new Service(101, IpPrefix.parse("192.0.2.11"),
        new TreeMap<>(Map.of(endpoint(1, 0), Treatment.SNAT))));
    DesiredState before = withClusterIp(state(services, RuleMode.SOURCE, IN_CLUSTER), ref(0), "10.96.0.10");
    services.remove(0);
    DesiredState after = state(services, RuleMode.SOURCE, IN_CLUSTER);
    assertThat(fast.reconcile(before).succeeded()).isTrue();
    assertThat(full.reconcile(before).succeeded()).isTrue();

    Map<String, String> viaFull = deletedRuleLabels(full.reconcile(after));
    Map<String, String> viaFast = deletedRuleLabels(fast.reconcileChanged(before, after, Set.of(ref(0))));

    assertThat(fast.fastPathStats().fallbacks()).isZero();
    for (Map<String, String> labels : List.of(viaFull, viaFast)) {
      assertThat(labels).hasSize(3).allSatisfy((rule, label) -> assertThat(label).as(rule).isEqualTo("ns0/svc0"));
      assertThat(labels.keySet()).anySatisfy(rule -> assertThat(rule).contains("from 10.96.0.10 lookup 100"))
          .anySatisfy(rule -> assertThat(rule).contains("from 10.244.0.2 lookup " + STEER_TABLE));
    }
  }

  @Test
  void aNodeWideChangeFallsBackToTheFullReconcile() {
    Map<Integer, Service> services = initial(new Random(5), 3);
    DesiredState before = state(services, RuleMode.SOURCE, IN_CLUSTER);
    assertThat(fast.reconcile(before).succeeded()).isTrue();
    long dumps = ((LinuxKernel) fast.kernel()).netlink().dumpRequests();

    List<IpPrefix> wider = List.of(IpPrefix.parse("10.96.0.0/12"), IpPrefix.parse("10.244.0.0/16"),
        IpPrefix.parse("172.16.0.0/12"));
    DesiredState after = state(services, RuleMode.SOURCE, wider);
    ApplyReport report = fast.reconcileChanged(before, after, Set.of());

    assertThat(report.succeeded()).isTrue();
    assertThat(fast.fastPathStats().fallbacks()).isEqualTo(1);
    assertThat(((LinuxKernel) fast.kernel()).netlink().dumpRequests()).as("the fallback observes").isGreaterThan(dumps);
    assertThat(fastNs.exec("ip", "route", "show", "table", "100")).contains("throw 172.16.0.0/12");
    assertThat(fast.reconcile(after).applied()).isEmpty();
  }

  @Test
  void withoutASuccessfulReconcileFirstTheFastPathFallsBack() {
    DesiredState s = state(initial(new Random(1), 2), RuleMode.SOURCE, IN_CLUSTER);
    ApplyReport report = fast.reconcileChanged(s, s, Set.of(ref(0)));
    assertThat(report.succeeded()).isTrue();
    assertThat(fast.fastPathStats().fallbacks()).isEqualTo(1);
    assertThat(fast.reconcile(s).applied()).isEmpty();
  }

  @Test
  void currentFactsReadLinksAndAddressesOnlyAfterInvalidation() {
    DesiredState s = state(initial(new Random(2), 2), RuleMode.SOURCE, IN_CLUSTER);
    assertThat(fast.reconcile(s).succeeded()).isTrue();
    KernelFacts first = fast.currentFacts(List.of());
    long dumps = ((LinuxKernel) fast.kernel()).netlink().dumpRequests();

    fastNs.exec("ip", "addr", "add", "198.51.100.7/32", "dev", "lo");
    KernelFacts again = fast.currentFacts(List.of());
    assertThat(((LinuxKernel) fast.kernel()).netlink().dumpRequests()).as("no dump without invalidation").isEqualTo(dumps);
    assertThat(again.localAddresses()).isEqualTo(first.localAddresses()).doesNotContain(IpPrefix.parse("198.51.100.7"));

    fast.invalidateFacts();
    KernelFacts fresh = fast.currentFacts(List.of());
    assertThat(fresh.localAddresses()).contains(IpPrefix.parse("198.51.100.7"));
    assertThat(((LinuxKernel) fast.kernel()).netlink().dumpRequests()).isEqualTo(dumps + 2); // links, addresses
    assertThat(fresh.existingSteerTables()).containsOnlyKeys(STEER_TABLE);
  }

  @Test
  void inMarkModeTheFactsKeepTheMarksTheKernelHolds() {
    DesiredState s = state(initial(new Random(3), 2), RuleMode.MARK, IN_CLUSTER);
    assertThat(fast.reconcile(s).succeeded()).isTrue();
    assertThat(fast.currentFacts(List.of()).existingMarks())
        .containsEntry(100L, 0x01000000L).containsEntry(101L, 0x02000000L);
  }

  @Test
  void inMarkModeANoChangeReconcileCommitsNothing() {
    // nft lists "meta mark & 0xc1ffffff | 0x01000000" for mask 0x3f000000: the network chains were taken for
    // wrong and rewritten by every reconcile (unreported: the rewrite was not described as a change).
    DesiredState s = state(initial(new Random(7), 2), RuleMode.MARK, IN_CLUSTER);
    assertThat(full.reconcile(s).succeeded()).isTrue();
    long generation = full.nftGeneration().orElseThrow();
    assertThat(full.reconcile(s).applied()).isEmpty();
    assertThat(full.nftGeneration().orElseThrow()).isEqualTo(generation);
  }

  @Test
  void aRuleSomeoneElseAddedMeanwhileIsNotLeftDoubled() {
    DesiredState s = state(initial(new Random(4), 1), RuleMode.SOURCE, IN_CLUSTER);
    // The plan is made against a dump without the rule; then someone adds exactly it before we apply.
    NodePlan plan = new NodePlan(s, Differ.wantedRules(s), fast.observe(), 0);
    fastNs.exec("ip", "rule", "add", "from", "10.244.0.1", "lookup", "100", "priority", "5000", "protocol", "201");

    assertThat(fast.reconcile(plan).succeeded()).isTrue();
    // Adds go without NLM_F_EXCL: the kernel took a second copy; the next full reconcile removes it.
    fast.reconcile(s);
    assertThat(fastNs.exec("ip", "rule", "show").lines().filter(l -> l.contains("from 10.244.0.1 ")).count())
        .isEqualTo(1);
    assertThat(fast.reconcile(s).applied()).isEmpty();
  }

  // ---------------------------------------------------------------- the oracle: iproute2 and nft

  private void assertSameKernelState() {
    assertThat(kernelState(fastNs)).isEqualTo(kernelState(fullNs));
  }

  /** Owned rules and throw routes as iproute2 prints them, and both tables of ours as nft lists them, normalised. */
  static List<String> kernelState(Netns ns) {
    List<String> out = new ArrayList<>();
    out.add("rules:");
    ns.exec("ip", "-4", "rule", "show").lines().filter(l -> l.contains("proto 201")).sorted().forEach(out::add);
    out.add("throw routes:");
    ns.exec("ip", "-4", "route", "show", "table", "all", "proto", "201").lines()
        .map(l -> l.replaceAll(" dev \\S+", "")).sorted().forEach(out::add);
    for (String table : List.of("egress_service_agent", "egress_service_agent_nohost")) {
      out.add("nft " + table + ":");
      Netns.Result r = ns.tryExec("nft", "-j", "list", "table", "inet", table);
      if (r.exitCode() != 0) {
        out.add("(absent)");
        continue;
      }
      out.addAll(normalised(ns.json("nft", "-j", "list", "table", "inet", table)));
    }
    return out;
  }

  /** Every object of a listing with its elements sorted (hash sets list in no fixed order), counters without values. */
  static List<String> normalised(JsonNode listing) {
    TreeSet<String> out = new TreeSet<>();
    for (JsonNode item : listing.path("nftables")) {
      for (String kind : List.of("set", "map")) {
        JsonNode s = item.path(kind);
        if (!s.isMissingNode()) {
          TreeSet<String> elems = new TreeSet<>();
          s.path("elem").forEach(e -> elems.add(e.toString()));
          out.add(kind + " " + s.path("name").asText() + " " + s.path("type") + " " + elems);
        }
      }
      JsonNode chain = item.path("chain");
      if (!chain.isMissingNode()) {
        out.add("chain " + chain.path("name").asText() + " " + chain.path("hook").asText());
      }
      JsonNode rule = item.path("rule");
      if (!rule.isMissingNode()) {
        out.add("rule " + rule.path("chain").asText() + " " + rule.path("expr").toString()
            .replaceAll("\"packets\":\\d+,\"bytes\":\\d+", ""));
      }
      JsonNode counter = item.path("counter");
      if (!counter.isMissingNode()) {
        out.add("counter " + counter.path("name").asText() + " " + counter.path("comment").asText());
      }
    }
    return new ArrayList<>(out);
  }

  @Test
  void theExpectedObservationOfAStateIsWhatObserveReturnsAfterApplyingIt() {
    DesiredState s = state(initial(new Random(6), 4), RuleMode.SOURCE, IN_CLUSTER);
    assertThat(fast.reconcile(s).succeeded()).isTrue();
    ObservedState real = fast.observe();
    ObservedState expected = ServiceSlices.expectedObservation(s, ReversePath.State.NONE, true);
    assertThat(new HashSet<>(expected.rules())).isEqualTo(new HashSet<>(real.rules()));
    assertThat(expected.nft().snat()).isEqualTo(real.nft().snat());
    assertThat(expected.nft().inCluster()).isEqualTo(real.nft().inCluster());
  }
}

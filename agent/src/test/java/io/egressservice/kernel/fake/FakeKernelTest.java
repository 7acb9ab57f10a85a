package io.egressservice.kernel.fake;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.kernel.NftException;
import io.egressservice.netlink.Address;
import io.egressservice.netlink.BatchResult;
import io.egressservice.netlink.ChangeEvent;
import io.egressservice.netlink.ChangeGroup;
import io.egressservice.netlink.ChangeKind;
import io.egressservice.netlink.ConntrackAnswer;
import io.egressservice.netlink.ConntrackEntry;
import io.egressservice.netlink.ConntrackTuple;
import io.egressservice.netlink.Link;
import io.egressservice.netlink.NetlinkException;
import io.egressservice.netlink.Route;
import io.egressservice.netlink.RouteChange;
import io.egressservice.netlink.RouteQuery;
import io.egressservice.netlink.RouteType;
import io.egressservice.netlink.Rule;
import io.egressservice.netlink.RuleChange;
import io.egressservice.netlink.SetElement;
import io.egressservice.netlink.Subscription;
import io.egressservice.netlink.VxlanDevice;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The fake kernel refuses what Linux refuses and keeps what Linux keeps, without privileges. */
class FakeKernelTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private final FakeKernel kernel = FakeKernel.create("t");
  private final FakeRouting routing = kernel.routing();

  private static Rule rule(int priority, String from) {
    return Rule.lookup(IpFamily.V4, priority, 100).from(IpPrefix.parse(from)).protocol(201);
  }

  @Test
  void rulesAreKeptByPriorityThenInTheOrderTheyCame() {
    routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.2")), RuleChange.add(rule(4000, "10.0.0.3")),
        RuleChange.add(rule(5000, "10.0.0.1"))));

    assertThat(routing.listRules(IpFamily.V4).stream().map(Rule::toString))
        .containsSubsequence("4000: from 10.0.0.3 lookup 100 proto 201", "5000: from 10.0.0.2 lookup 100 proto 201",
            "5000: from 10.0.0.1 lookup 100 proto 201", "32766: from all lookup main proto kernel");
  }

  @Test
  void aBatchReportsEachRefusalAsTheKernelDoesAndAppliesTheRest() {
    routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.1"))));

    BatchResult<RuleChange> result = routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.1")),
        RuleChange.delete(rule(5000, "10.0.0.9")), RuleChange.add(rule(5000, "10.0.0.2"))));

    assertThat(result.succeeded()).containsExactly(RuleChange.add(rule(5000, "10.0.0.2")));
    assertThat(result.failed()).extracting(f -> (Object) f.error().getClass())
        .containsExactly(NetlinkException.AlreadyExists.class, NetlinkException.NotFound.class);
    assertThat(result.failed()).extracting(f -> f.error().errno())
        .containsExactly(NetlinkException.EEXIST, NetlinkException.ENOENT);
  }

  @Test
  void aNonExclusiveAddOfARuleThatIsThereMakesASecondCopy() {
    routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.1"))));

    assertThat(routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.1"))), false).allSucceeded()).isTrue();

    assertThat(routing.listRules(IpFamily.V4)).filteredOn(r -> r.equals(rule(5000, "10.0.0.1"))).hasSize(2);
  }

  @Test
  void aDeleteTakesTheFirstRuleItMatchesWithWhatItLeavesOutAsWildcards() {
    routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.1")), RuleChange.add(rule(5000, "10.0.0.2"))));

    routing.apply(List.of(RuleChange.delete(Rule.lookup(IpFamily.V4, 5000, 100))));

    assertThat(routing.listRules(IpFamily.V4)).contains(rule(5000, "10.0.0.2")).doesNotContain(rule(5000, "10.0.0.1"));
  }

  @Test
  void routesAreRefusedAsTheKernelRefusesThem() {
    Route throwRoute = Route.of(IpFamily.V4, 100, RouteType.THROW, Optional.of(IpPrefix.parse("10.96.0.0/12")));
    Route viaMissingDevice = Route.of(IpFamily.V4, 100, RouteType.UNICAST, Optional.empty()).dev(42);

    BatchResult<RouteChange> result = routing.applyRoutes(List.of(RouteChange.add(throwRoute),
        RouteChange.add(throwRoute), RouteChange.add(viaMissingDevice),
        RouteChange.delete(Route.of(IpFamily.V4, 100, RouteType.BLACKHOLE, Optional.empty()))));

    assertThat(result.succeeded()).containsExactly(RouteChange.add(throwRoute));
    assertThat(result.failed()).extracting(f -> (Object) f.error().getClass()).containsExactly(
        NetlinkException.AlreadyExists.class, NetlinkException.NotFound.class, NetlinkException.NotFound.class);
    assertThat(routing.listRoutes(IpFamily.V4, 100)).containsExactly(throwRoute);
  }

  @Test
  void deletingADeviceDropsItsAddressesAndTheRoutesThroughIt() {
    Link dev = routing.createVxlan(new VxlanDevice("egress-vx", 4790, false, 0, "ours"));
    routing.addAddress(new Address(IpFamily.V4, dev.index(), IpPrefix.parse("169.254.0.1"), 32, Address.SCOPE_LINK));
    Route steer = Route.of(IpFamily.V4, 100, RouteType.UNICAST, Optional.empty()).dev(dev.index()).protocol(201);
    assertThat(routing.applyRoutes(List.of(RouteChange.add(steer))).allSucceeded()).isTrue();

    routing.deleteLink(dev.index());

    assertThat(routing.listLinks()).extracting(Link::name).containsExactly("lo");
    assertThat(routing.listAddresses()).noneMatch(a -> a.index() == dev.index());
    assertThat(routing.listAllRoutes(IpFamily.V4)).noneMatch(r -> r.oif().orElse(0) == dev.index());
    assertThatThrownBy(() -> routing.deleteLink(dev.index())).isInstanceOf(NetlinkException.NotFound.class);
  }

  @Test
  void routeGetWalksTheRulesAndAnswersWithTheLongestMatch() {
    Link eth = routing.byHand().addLink("eth0", "dummy", 1500, true);
    routing.byHand().addAddress(new Address(IpFamily.V4, eth.index(), IpPrefix.parse("192.168.1.10"), 24, 0));

    RouteQuery.Answer a = routing.routeGet(RouteQuery.Lookup.to(IpPrefix.parse("192.168.1.20")));

    assertThat(a.table()).isEqualTo(254);
    assertThat(a.outputInterface()).hasValue(eth.index());
    assertThat(routing.routeGet(RouteQuery.Lookup.to(IpPrefix.parse("192.168.1.10"))).type())
        .isEqualTo(RouteType.LOCAL);
    assertThatThrownBy(() -> routing.routeGet(RouteQuery.Lookup.to(IpPrefix.parse("8.8.8.8"))))
        .isInstanceOf(NetlinkException.class);
  }

  @Test
  void changesThroughItAndByHandReachSubscribersOnTheirOwnThread() {
    List<ChangeEvent> events = new CopyOnWriteArrayList<>();
    List<Thread> threads = new CopyOnWriteArrayList<>();
    try (Subscription s = routing.subscribe(Set.of(ChangeGroup.IPV4_RULE, ChangeGroup.LINK), e -> {
      threads.add(Thread.currentThread());
      events.add(e);
    }, () -> {})) {
      routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.1"))));
      routing.byHand().deleteRule(rule(5000, "10.0.0.1"));
      routing.byHand().addLink("eth1", "dummy", 1500, true);

      await().atMost(Duration.ofSeconds(5)).until(() -> events.size() == 3);
      assertThat(events).extracting(ChangeEvent::kind)
          .containsExactly(ChangeKind.NEW, ChangeKind.DELETED, ChangeKind.NEW);
      assertThat(threads).doesNotContain(Thread.currentThread());
    }
  }

  @Test
  void lostNotificationsAreReportedToEachSubscriptionOnItsThread() {
    List<Thread> overflows = new CopyOnWriteArrayList<>();
    try (Subscription s = routing.subscribe(Set.of(ChangeGroup.LINK), e -> {},
        () -> overflows.add(Thread.currentThread()))) {
      routing.byHand().loseNotifications();

      await().atMost(Duration.ofSeconds(5)).until(() -> s.overflows() == 1);
      assertThat(overflows).hasSize(1).doesNotContain(Thread.currentThread());
    }
  }

  @Test
  void aClosedKernelEndsItsSubscriptions() {
    List<ChangeEvent> events = new CopyOnWriteArrayList<>();
    Subscription s = routing.subscribe(Set.of(ChangeGroup.IPV4_RULE), events::add, () -> {});

    kernel.close();
    routing.apply(List.of(RuleChange.add(rule(5000, "10.0.0.1"))));

    assertThat(s.isClosed()).isTrue();
    assertThat(events).isEmpty();
  }

  @Test
  void flowsAreDumpedAndDeletedAsTheKernelAnswers() {
    ConntrackTuple out = ConntrackTuple.of(6, IpPrefix.parse("10.128.0.5"), 40000, IpPrefix.parse("1.1.1.1"), 443);
    ConntrackTuple back = ConntrackTuple.of(6, IpPrefix.parse("1.1.1.1"), 443, IpPrefix.parse("5.5.5.5"), 40000);
    ConntrackEntry flow = new ConntrackEntry(out, back);
    kernel.flows().add(flow);

    assertThat(kernel.flows().dumpFrom(IpPrefix.parse("10.128.0.5"), e -> true).entries()).containsExactly(flow);
    assertThat(kernel.flows().dump(Set.of(IpFamily.V6), e -> true).entries()).isEmpty();
    assertThat(kernel.flows().delete(List.of(flow.key(), flow.key())))
        .extracting(ConntrackAnswer::done, ConntrackAnswer::gone)
        .containsExactly(org.assertj.core.groups.Tuple.tuple(true, false),
            org.assertj.core.groups.Tuple.tuple(false, true));
    assertThat(kernel.flows().entries()).isEmpty();
    assertThat(kernel.flows().requests()).filteredOn(r -> r.startsWith("delete")).hasSize(2);
  }

  // ---------------------------------------------------------------------------------------------- nftables

  private JsonNode doc(String json) throws Exception {
    return JSON.readTree("{\"nftables\":[" + json + "]}");
  }

  private static final String TABLE = "{\"add\":{\"table\":{\"family\":\"inet\",\"name\":\"t\"}}}";
  private static final String MAP = "{\"add\":{\"map\":{\"family\":\"inet\",\"table\":\"t\",\"name\":\"m\","
      + "\"type\":\"ipv4_addr\",\"map\":\"ipv4_addr\"}}}";

  private static String element(String verb, String key, String value) {
    return "{\"" + verb + "\":{\"element\":{\"family\":\"inet\",\"table\":\"t\",\"name\":\"m\",\"elem\":[[\"" + key
        + "\",\"" + value + "\"]]}}}";
  }

  @Test
  void aTransactionIsAllOrNothingAndOnlyACommitMovesTheGeneration() throws Exception {
    FakeNftables nft = kernel.nftables();
    nft.run(doc(TABLE + "," + MAP + "," + element("add", "10.0.0.1", "1.1.1.1")));
    long generation = kernel.openGeneration().read();

    assertThatThrownBy(() -> nft.run(doc(element("add", "10.0.0.2", "1.1.1.2") + ","
        + element("delete", "10.0.0.9", "1.1.1.1"))))
        .isInstanceOfSatisfying(NftException.class, e -> assertThat(e.isNotFound()).isTrue());

    assertThat(kernel.openGeneration().read()).isEqualTo(generation);
    assertThat(nft.setElements("inet", "t", "m", Collectors.toList()).orElseThrow())
        .extracting(e -> IpPrefix.host(e.key()).toString()).containsExactly("10.0.0.1");
    nft.run(doc(element("add", "10.0.0.2", "1.1.1.2")));
    assertThat(kernel.openGeneration().read()).isEqualTo(generation + 1);
  }

  @Test
  void nftRefusesAsTheKernelDoes() throws Exception {
    FakeNftables nft = kernel.nftables();
    assertThatThrownBy(() -> nft.run(doc(element("add", "10.0.0.1", "1.1.1.1"))))
        .isInstanceOfSatisfying(NftException.class, e -> assertThat(e.isNotFound()).isTrue());
    nft.run(doc(TABLE + "," + MAP + "," + element("add", "10.0.0.1", "1.1.1.1")));

    assertThatThrownBy(() -> nft.run(doc(TABLE.replace("add", "create"))))
        .isInstanceOfSatisfying(NftException.class, e -> assertThat(e.nftError()).contains("File exists"));
    assertThatThrownBy(() -> nft.run(doc(element("add", "10.0.0.1", "2.2.2.2"))))
        .isInstanceOfSatisfying(NftException.class, e -> assertThat(e.nftError()).contains("File exists"));
    nft.run(doc(element("add", "10.0.0.1", "1.1.1.1"))); // the same element again is no error
    assertThatThrownBy(() -> nft.runScript("flush ruleset\n")).isInstanceOf(UnsupportedOperationException.class)
        .hasMessageContaining("libnftables JSON only");
  }

  @Test
  void aChainThatAnElementJumpsToCannotBeDeleted() throws Exception {
    FakeNftables nft = kernel.nftables();
    nft.run(doc(TABLE + ",{\"add\":{\"chain\":{\"family\":\"inet\",\"table\":\"t\",\"name\":\"mark_t1\"}}},"
        + "{\"add\":{\"map\":{\"family\":\"inet\",\"table\":\"t\",\"name\":\"v\",\"type\":\"ipv4_addr\","
        + "\"map\":\"verdict\"}}},{\"add\":{\"element\":{\"family\":\"inet\",\"table\":\"t\",\"name\":\"v\","
        + "\"elem\":[[\"10.0.0.1\",{\"jump\":{\"target\":\"mark_t1\"}}]]}}}"));

    assertThatThrownBy(() -> nft.run(doc("{\"delete\":{\"chain\":{\"family\":\"inet\",\"table\":\"t\","
        + "\"name\":\"mark_t1\"}}}"))).isInstanceOfSatisfying(NftException.class,
            e -> assertThat(e.nftError()).contains("Device or resource busy"));
    assertThat(nft.setElements("inet", "t", "v", Collectors.toList()).orElseThrow())
        .extracting(e -> e.verdict().orElseThrow().toString()).containsExactly("jump mark_t1");
  }

  @Test
  void anIntervalIsHeldAsTheKernelHoldsItAndListedAsNftPrintsIt() throws Exception {
    FakeNftables nft = kernel.nftables();
    nft.run(doc(TABLE + ",{\"add\":{\"set\":{\"family\":\"inet\",\"table\":\"t\",\"name\":\"s\",\"type\":"
        + "\"ipv4_addr\",\"flags\":[\"interval\"]}}},{\"add\":{\"element\":{\"family\":\"inet\",\"table\":\"t\","
        + "\"name\":\"s\",\"elem\":[{\"prefix\":{\"addr\":\"10.0.0.0\",\"len\":8}},\"172.16.0.5\","
        + "{\"range\":[\"192.168.1.1\",\"192.168.1.9\"]}]}}}"));

    assertThat(nft.setElements("inet", "t", "s", Collectors.toList()).orElseThrow()).filteredOn(
        SetElement::intervalEnd).extracting(e -> IpPrefix.host(e.key()).toString())
        .containsExactly("11.0.0.0", "172.16.0.6", "192.168.1.10");
    assertThat(KernelDump.nftables(nft.listTableIfPresent("inet", "t").orElseThrow())).isEqualTo("""
        table inet t
          set s type ipv4_addr flags ["interval"]
            elem "172.16.0.5"
            elem {"prefix":{"addr":"10.0.0.0","len":8}}
            elem {"range":["192.168.1.1","192.168.1.9"]}
        """);
  }
}

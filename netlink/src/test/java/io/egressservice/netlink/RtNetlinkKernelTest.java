package io.egressservice.netlink;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * RtNetlink against the real kernel, each test in a throwaway network namespace, with iproute2 as
 * the independent oracle (what we write is what {@code ip -j ...} reads, and the reverse).
 */
class RtNetlinkKernelTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final IpFamily V4 = IpFamily.V4;
  private static final IpFamily V6 = IpFamily.V6;
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("nl");
  private Netns ns;
  private RtNetlink nl;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    ns.exec("ip", "link", "add", "va", "type", "veth", "peer", "name", "vb");
    nl = kernel.closeLater(RtNetlink.open(Optional.of(ns.name())));
  }

  private static IpPrefix p(String s) {
    return IpPrefix.parse(s);
  }

  /** The rule of {@code ip -j [-6] rule show} at {@code priority} (exactly one must exist). */
  private JsonNode ipRule(IpFamily family, int priority) {
    JsonNode all = family == V6 ? ns.json("ip", "-j", "-6", "rule", "show") : ns.json("ip", "-j", "rule", "show");
    List<JsonNode> at = StreamSupport.stream(all.spliterator(), false)
        .filter(r -> r.get("priority").asInt() == priority).collect(Collectors.toList());
    assertThat(at).as("rules at priority %d", priority).hasSize(1);
    return at.get(0);
  }

  private static JsonNode json(String text) {
    try {
      return JSON.readTree(text);
    } catch (Exception e) {
      throw new IllegalArgumentException(e);
    }
  }

  @Test
  void rulesWeAddAreWhatIpRuleShowPrintsAttributeByAttribute() {
    List<Rule> rules = List.of(
        Rule.lookup(V4, 5000, 100).from(p("10.0.0.5")).protocol(201),
        Rule.lookup(V4, 5001, 1000).from(p("10.1.0.0/16")).to(p("192.168.0.0/24")).fwmark(0x10, 0xff)
            .iif("va").oif("vb").suppressPrefixLength(0),
        Rule.of(V4, 5002, RuleAction.UNREACHABLE),
        Rule.goTo(V4, 5003, 6000),
        Rule.of(V4, 5004, RuleAction.BLACKHOLE).from(p("10.2.0.1")).inverted(true),
        Rule.of(V4, 5005, RuleAction.PROHIBIT).fwmark(7),
        Rule.of(V4, 5006, RuleAction.NOP),
        Rule.lookup(V4, 6000, 254).to(p("10.3.0.0/24")).protocol(201));
    rules.forEach(nl::addRule);

    assertThat(ipRule(V4, 5000)).isEqualTo(json("""
        {"priority":5000,"src":"10.0.0.5","table":"100","protocol":"201"}"""));
    assertThat(ipRule(V4, 5001)).isEqualTo(json("""
        {"priority":5001,"src":"10.1.0.0","srclen":16,"dst":"192.168.0.0","dstlen":24,"fwmark":"0x10","fwmask":"0xff",
         "iif":"va","oif":"vb","table":"1000","suppress_prefixlen":0}"""));
    assertThat(ipRule(V4, 5002)).isEqualTo(json("""
        {"priority":5002,"src":"all","action":"unreachable"}"""));
    assertThat(ipRule(V4, 5003)).isEqualTo(json("""
        {"priority":5003,"src":"all","goto":6000}"""));
    assertThat(ipRule(V4, 5004)).isEqualTo(json("""
        {"priority":5004,"not":null,"src":"10.2.0.1","action":"blackhole"}"""));
    assertThat(ipRule(V4, 5005)).isEqualTo(json("""
        {"priority":5005,"src":"all","fwmark":"0x7","action":"prohibit"}"""));
    assertThat(ipRule(V4, 5006)).isEqualTo(json("""
        {"priority":5006,"src":"all","nop":null}"""));
    assertThat(ipRule(V4, 6000)).isEqualTo(json("""
        {"priority":6000,"src":"all","dst":"10.3.0.0","dstlen":24,"table":"main","protocol":"201"}"""));

    // ... and listing them back gives exactly what was added, the kernel's default rules around them.
    List<Rule> expected = new ArrayList<>();
    expected.add(Rule.lookup(V4, 0, 255).protocol(2));
    expected.addAll(rules);
    expected.add(Rule.lookup(V4, 32766, 254).protocol(2));
    expected.add(Rule.lookup(V4, 32767, 253).protocol(2));
    assertThat(nl.listRules(V4)).containsExactlyElementsOf(expected);
  }

  /** OVN-Kubernetes' ETP=Local rule, {@code from <masquerade IP> sport <nodePort>}. */
  @Test
  void sourcePortRulesMatchIpRuleShowBothWaysAndBothFamilies() {
    Rule v4 = Rule.lookup(V4, 5000, 100).from(p("169.254.169.3")).sourcePort(30300).protocol(201);
    Rule v6 = Rule.lookup(V6, 5000, 100).from(p("fd69::3")).sourcePort(30300).protocol(201);
    nl.addRule(v4);
    nl.addRule(v6);
    assertThat(ipRule(V4, 5000)).isEqualTo(json("""
        {"priority":5000,"src":"169.254.169.3","sport":30300,"table":"100","protocol":"201"}"""));
    assertThat(ipRule(V6, 5000)).isEqualTo(json("""
        {"priority":5000,"src":"fd69::3","sport":30300,"table":"100","protocol":"201"}"""));
    assertThat(nl.listRules(V4)).contains(v4);
    assertThat(nl.listRules(V6)).contains(v6);
    assertThat(v4.toString()).isEqualTo("5000: from 169.254.169.3 sport 30300 lookup 100 proto 201");

    ns.exec("ip", "rule", "add", "prio", "5001", "from", "169.254.169.3", "sport", "1000-2000", "lookup", "101");
    assertThat(nl.listRules(V4)).filteredOn(r -> r.priority() == 5001)
        .extracting(r -> r.sourcePort().orElseThrow().toString()).containsExactly("1000-2000");
    nl.deleteRule(v4);
    assertThat(nl.listRules(V4)).doesNotContain(v4).anyMatch(r -> r.priority() == 5001);
  }

  @Test
  void ipv6RulesMatchIpDash6RuleShow() {
    Rule a = Rule.lookup(V6, 5000, 100).from(p("2001:db8::1")).protocol(201);
    Rule b = Rule.lookup(V6, 5001, 70000).from(p("2001:db8:1::/48")).to(p("fd00::/8")).fwmark(1, 3).protocol(201);
    nl.addRule(a);
    nl.addRule(b);
    assertThat(ipRule(V6, 5000)).isEqualTo(json("""
        {"priority":5000,"src":"2001:db8::1","table":"100","protocol":"201"}"""));
    assertThat(ipRule(V6, 5001)).isEqualTo(json("""
        {"priority":5001,"src":"2001:db8:1::","srclen":48,"dst":"fd00::","dstlen":8,"fwmark":"0x1","fwmask":"0x3",
         "table":"70000","protocol":"201"}"""));
    assertThat(nl.listRules(V6)).contains(a, b).allMatch(r -> r.family() == V6);
    assertThat(nl.listRules(V4)).noneMatch(r -> r.priority() == 5000);
  }

  @Test
  void rulesAddedByIpDecodeIdenticallyAndPrintTheSame() {
    String[][] commands = {
        {"from", "10.0.0.5", "lookup", "100", "prio", "5000", "proto", "201"},
        {"from", "10.1.0.0/16", "to", "192.168.0.0/24", "fwmark", "0x10/0xff", "iif", "va", "oif", "vb", "lookup", "1000",
            "suppress_prefixlength", "0", "prio", "5001"},
        {"prio", "5002", "unreachable"},
        {"prio", "5003", "goto", "6000"},
        {"not", "from", "10.2.0.1", "prio", "5004", "blackhole"},
        {"fwmark", "7", "prio", "5005", "prohibit"},
        {"prio", "5006", "nop"},
        {"to", "10.3.0.0/24", "lookup", "main", "prio", "6000", "proto", "201"},
        {"from", "10.4.0.1", "lookup", "300", "prio", "6001"},
    };
    for (String[] c : commands) {
      List<String> cmd = new ArrayList<>(List.of("ip", "rule", "add"));
      cmd.addAll(List.of(c));
      ns.exec(cmd.toArray(String[]::new));
    }
    List<Rule> listed = nl.listRules(V4);
    assertThat(listed).contains(
        Rule.lookup(V4, 5000, 100).from(p("10.0.0.5")).protocol(201),
        Rule.lookup(V4, 5001, 1000).from(p("10.1.0.0/16")).to(p("192.168.0.0/24")).fwmark(0x10, 0xff)
            .iif("va").oif("vb").suppressPrefixLength(0),
        Rule.of(V4, 5002, RuleAction.UNREACHABLE),
        Rule.goTo(V4, 5003, 6000),
        Rule.of(V4, 5004, RuleAction.BLACKHOLE).from(p("10.2.0.1")).inverted(true),
        Rule.of(V4, 5005, RuleAction.PROHIBIT).fwmark(7),
        Rule.of(V4, 5006, RuleAction.NOP),
        Rule.lookup(V4, 6000, 254).to(p("10.3.0.0/24")).protocol(201),
        Rule.lookup(V4, 6001, 300).from(p("10.4.0.1")));
    // toString is `ip rule show` with a space for the tab (iproute2 hides proto kernel).
    List<String> ipLines = Arrays.stream(ns.exec("ip", "rule", "show").split("\n"))
        .map(l -> l.replace(":\t", ": ").trim()).collect(Collectors.toList());
    assertThat(listed.stream().map(Rule::toString).map(s -> s.replace(" proto kernel", "")))
        .containsExactlyElementsOf(ipLines);
  }

  /**
   * At the wire: every selector the kernel reports survives decoding (iproute2 prints
   * the same line), makes the rule differ from the one without it, and goes back into the delete request,
   * so deleting it removes that rule and not ours at the same priority.
   */
  @Test
  void everySelectorTheKernelReportsIsDecodedAndDeletedExactly() {
    Rule ours = Rule.lookup(V4, 5000, 100).from(p("10.0.0.5")).protocol(201);
    String[][] extras = {
        {"ipproto", "tcp", "dport", "9"},
        {"ipproto", "udp", "sport", "1000-2000"},
        {"tos", "0x10"},
        {"uidrange", "100-200"},
        {"suppress_ifgroup", "5"},
        {"realms", "7"},
        {"tun_id", "9"},
        {"fwmark", "0x1", "iif", "lo", "oif", "lo", "uidrange", "1-2", "ipproto", "tcp", "sport", "1", "dport", "2",
            "tun_id", "3", "suppress_prefixlength", "8", "suppress_ifgroup", "4", "realms", "5", "tos", "0x10"},
    };
    nl.addRule(ours); // first: the kernel takes ours for a duplicate of a tos or realms rule (see Dataplane.apply)
    for (String[] extra : extras) {
      List<String> cmd = new ArrayList<>(List.of("ip", "rule", "add", "prio", "5000", "from", "10.0.0.5"));
      cmd.addAll(List.of(extra));
      cmd.addAll(List.of("lookup", "100", "proto", "201"));
      ns.exec(cmd.toArray(String[]::new));
    }
    List<Rule> listed = nl.listRules(V4).stream().filter(r -> r.priority() == 5000 && !r.equals(ours)).toList();
    List<String> ipLines = Arrays.stream(ns.exec("ip", "rule", "show").split("\n"))
        .filter(l -> l.startsWith("5000:") && !l.equals("5000:\tfrom 10.0.0.5 lookup 100 proto 201"))
        .map(l -> l.replace(":\t", ": ").trim()).toList();
    assertThat(listed.stream().map(Rule::toString)).containsExactlyElementsOf(ipLines);
    assertThat(listed).hasSize(extras.length).doesNotContain(ours).allMatch(Rule::hasOtherSelectors);

    for (Rule stale : listed) {
      nl.deleteRule(stale);
    }

    assertThat(ns.exec("ip", "rule", "show")).contains("5000:\tfrom 10.0.0.5 lookup 100 proto 201")
        .doesNotContain("dport").doesNotContain("uidrange").doesNotContain("tos").doesNotContain("realms")
        .doesNotContain("tun_id").doesNotContain("suppress_ifgroup");
    assertThat(nl.listRules(V4)).filteredOn(r -> r.priority() == 5000).containsExactly(ours);
  }

  @Test
  void deleteRemovesExactlyTheRuleWithItsProtocol() {
    Rule ours = Rule.lookup(V4, 5000, 100).from(p("10.0.0.5")).protocol(201);
    ns.exec("ip", "rule", "add", "from", "10.0.0.5", "lookup", "100", "prio", "5000", "proto", "202");
    nl.addRule(ours);
    nl.addRule(ours.from(p("10.0.0.6")));
    assertThat(nl.listRules(V4)).filteredOn(r -> r.priority() == 5000).hasSize(3);

    nl.deleteRule(ours);

    JsonNode left = ns.json("ip", "-j", "rule", "show");
    assertThat(StreamSupport.stream(left.spliterator(), false).filter(r -> r.get("priority").asInt() == 5000)
        .map(r -> r.get("src").asText() + " " + r.get("protocol").asText()))
        .containsExactlyInAnyOrder("10.0.0.5 202", "10.0.0.6 201");
    assertThatThrownBy(() -> nl.deleteRule(ours)).isInstanceOf(NetlinkException.NotFound.class);
  }

  @Test
  void errorsComeBackTypedWithTheRequestAndNamespace() {
    Rule rule = Rule.lookup(V4, 5000, 100).from(p("10.0.0.5")).protocol(201);
    nl.addRule(rule);
    assertThatThrownBy(() -> nl.addRule(rule))
        .isInstanceOfSatisfying(NetlinkException.AlreadyExists.class, e -> {
          assertThat(e.errno()).isEqualTo(NetlinkException.EEXIST);
          assertThat(e.request()).contains("add ip rule '5000: from 10.0.0.5 lookup 100 proto 201'");
        })
        .hasMessage("add ip rule '5000: from 10.0.0.5 lookup 100 proto 201' in netns " + ns.name() + ": already exists");
    assertThatThrownBy(() -> nl.deleteRule(rule.from(p("10.9.9.9"))))
        .isInstanceOfSatisfying(NetlinkException.NotFound.class, e -> assertThat(e.errno()).isEqualTo(NetlinkException.ENOENT))
        .hasMessageContaining("delete ip rule '5000: from 10.9.9.9 lookup 100 proto 201' in netns " + ns.name());
    assertThatThrownBy(() -> nl.addRule(Rule.goTo(V4, 100, 50)))
        .isInstanceOfSatisfying(NetlinkException.InvalidArgument.class, e -> assertThat(e.errno()).isEqualTo(NetlinkException.EINVAL))
        .hasMessageContaining("add ip rule '100: from all goto 50'")
        .hasMessageContaining("kernel: Backward goto not supported");
    assertThatThrownBy(() -> RtNetlink.open(Optional.of("esa-no-such-netns-x")))
        .isInstanceOf(NetlinkException.NoSuchNamespace.class).hasMessageContaining("esa-no-such-netns-x");
  }

  @Test
  void batchReportsTheOneBadRequestAndAppliesTheRest() {
    List<RuleChange> changes = new ArrayList<>();
    for (int i = 0; i < 300; i++) {
      changes.add(RuleChange.add(Rule.lookup(V4, 5000, 100).from(p("10.7." + (i / 250) + "." + (i % 250))).protocol(201)));
    }
    RuleChange bad = RuleChange.add(Rule.goTo(V4, 5000, 10));
    changes.add(150, bad);
    RuleChange missing = RuleChange.delete(Rule.lookup(V4, 5000, 100).from(p("10.99.0.1")).protocol(201));
    changes.add(missing);

    BatchResult<RuleChange> result = nl.apply(changes);

    assertThat(result.failed()).extracting(BatchResult.Failure::change).containsExactly(bad, missing);
    assertThat(result.failed().get(0).error()).isInstanceOf(NetlinkException.InvalidArgument.class)
        .hasMessageContaining("5000: from all goto 10");
    assertThat(result.failed().get(1).error()).isInstanceOf(NetlinkException.NotFound.class);
    assertThat(result.succeeded()).hasSize(300);
    assertThat(ns.json("ip", "-j", "rule", "show")).hasSize(303);

    // Deleting them all in one batch leaves the kernel's three default rules.
    BatchResult<RuleChange> del = nl.apply(result.succeeded().stream().map(c -> RuleChange.delete(c.rule())).collect(Collectors.toList()));
    assertThat(del.allSucceeded()).isTrue();
    assertThat(nl.listRules(V4)).hasSize(3);
  }

  @Test
  void largeBatchIsChunkedWithoutLosingAcknowledgements() {
    List<RuleChange> changes = new ArrayList<>();
    for (int i = 0; i < 6000; i++) {
      changes.add(RuleChange.add(Rule.lookup(V4, 5000, 100)
          .from(IpPrefix.host(new byte[] {10, 20, (byte) (i >> 8), (byte) i})).protocol(201)));
    }
    long t0 = System.nanoTime();
    BatchResult<RuleChange> r = nl.apply(changes);
    long ms = (System.nanoTime() - t0) / 1_000_000;
    System.out.println("6000 rules in one apply(): " + ms + " ms");
    assertThat(r.failed()).isEmpty();
    assertThat(nl.listRules(V4)).hasSize(6003);
  }

  @Test
  void routesMatchIpRouteShowTable() {
    ns.exec("ip", "link", "set", "va", "up");
    ns.exec("ip", "link", "set", "vb", "up");
    ns.exec("ip", "addr", "add", "10.3.0.1/24", "dev", "va");
    ns.exec("ip", "addr", "add", "2001:db8:3::1/64", "dev", "va", "nodad");
    int va = nl.listLinks().stream().filter(l -> l.name().equals("va")).findFirst().orElseThrow().index();

    Route viaGw = Route.of(V4, 300, RouteType.UNICAST, Optional.of(p("10.8.0.0/16"))).via(p("10.3.0.2")).dev(va).protocol(201);
    Route direct = Route.of(V4, 100, RouteType.UNICAST, Optional.of(p("10.9.0.0/24"))).dev(va).protocol(201).metric(5);
    Route blackhole = Route.of(V4, 100, RouteType.BLACKHOLE, Optional.empty()).protocol(201);
    Route v6 = Route.of(V6, 100, RouteType.UNICAST, Optional.empty()).via(p("2001:db8:3::2")).dev(va).protocol(201).metric(1024);
    for (Route r : List.of(viaGw, direct, blackhole, v6)) {
      nl.addRoute(r);
    }

    assertThat(ns.json("ip", "-j", "route", "show", "table", "300")).isEqualTo(json("""
        [{"dst":"10.8.0.0/16","gateway":"10.3.0.2","dev":"va","protocol":"201","flags":[]}]"""));
    assertThat(ns.json("ip", "-j", "route", "show", "table", "100")).isEqualTo(json("""
        [{"type":"blackhole","dst":"default","protocol":"201","flags":[]},
         {"dst":"10.9.0.0/24","dev":"va","protocol":"201","scope":"link","metric":5,"flags":[]}]"""));
    JsonNode six = ns.json("ip", "-j", "-6", "route", "show", "table", "100");
    assertThat(six).hasSize(1);
    assertThat(six.get(0).get("dst").asText()).isEqualTo("default");
    assertThat(six.get(0).get("gateway").asText()).isEqualTo("2001:db8:3::2");
    assertThat(six.get(0).get("protocol").asText()).isEqualTo("201");
    assertThat(six.get(0).get("metric").asInt()).isEqualTo(1024);

    assertThat(nl.listRoutes(V4, 300)).containsExactly(viaGw);
    assertThat(nl.listRoutes(V4, 100)).containsExactlyInAnyOrder(direct, blackhole);
    assertThat(nl.listRoutes(V6, 100)).containsExactly(v6);

    // A route added by `ip route add` decodes as the same value.
    ns.exec("ip", "route", "add", "unreachable", "10.10.0.0/16", "table", "400", "proto", "static");
    assertThat(nl.listRoutes(V4, 400)).containsExactly(
        Route.of(V4, 400, RouteType.UNREACHABLE, Optional.of(p("10.10.0.0/16"))).protocol(4));

    nl.deleteRoute(direct);
    assertThat(nl.listRoutes(V4, 100)).containsExactly(blackhole);
    assertThatThrownBy(() -> nl.deleteRoute(direct)).isInstanceOf(NetlinkException.NotFound.class)
        .hasMessageContaining("delete ip route '10.9.0.0/24");
    assertThatThrownBy(() -> nl.addRoute(blackhole)).isInstanceOf(NetlinkException.AlreadyExists.class);
  }

  @Test
  void throwRoutesInABatchAreWhatIpRouteShowPrintsAndDeleteOnlyOurs() {
    Route admin = Route.of(V4, 100, RouteType.BLACKHOLE, Optional.empty());
    nl.addRoute(admin); // someone else's default route in the same table, protocol boot
    List<Route> ours = List.of(
        Route.of(V4, 100, RouteType.THROW, Optional.of(p("10.128.0.0/14"))).protocol(201),
        Route.of(V4, 100, RouteType.THROW, Optional.of(p("192.168.1.10"))).protocol(201),
        Route.of(V4, 70000, RouteType.THROW, Optional.of(p("10.128.0.0/14"))).protocol(201),
        Route.of(V6, 100, RouteType.THROW, Optional.of(p("fd00:10::/64"))).protocol(201));

    BatchResult<RouteChange> added = nl.applyRoutes(ours.stream().map(RouteChange::add).toList());
    assertThat(added.failed()).isEmpty();
    assertThat(ns.json("ip", "-j", "route", "show", "table", "100")).isEqualTo(json("""
        [{"type":"blackhole","dst":"default","flags":[]},
         {"type":"throw","dst":"10.128.0.0/14","protocol":"201","flags":[]},
         {"type":"throw","dst":"192.168.1.10","protocol":"201","flags":[]}]"""));
    assertThat(ns.json("ip", "-j", "route", "show", "table", "70000")).isEqualTo(json("""
        [{"type":"throw","dst":"10.128.0.0/14","protocol":"201","flags":[]}]"""));
    JsonNode six = ns.json("ip", "-j", "-6", "route", "show", "table", "100");
    assertThat(six).hasSize(1);
    assertThat(six.get(0).get("type").asText()).isEqualTo("throw");
    assertThat(six.get(0).get("dst").asText()).isEqualTo("fd00:10::/64");
    assertThat(six.get(0).get("protocol").asText()).isEqualTo("201");
    assertThat(nl.listAllRoutes(V4)).contains(ours.get(0), ours.get(1), ours.get(2), admin);
    ns.exec("ip", "route", "add", "throw", "10.77.0.0/16", "table", "100", "proto", "static");
    ns.exec("ip", "route", "add", "blackhole", "10.78.0.0/16", "table", "100", "proto", "201");
    assertThat(nl.listRoutes(V4, RouteType.THROW, 201)).containsExactlyInAnyOrder(ours.get(0), ours.get(1), ours.get(2));
    assertThat(nl.listRoutes(V6, RouteType.THROW, 201)).singleElement().satisfies(r -> { // the kernel adds dev lo, metric 1024
      assertThat(r.destination()).isEqualTo(ours.get(3).destination());
      assertThat(r.table()).isEqualTo(100);
    });

    // The same again: EEXIST each, reported per request.
    BatchResult<RouteChange> again = nl.applyRoutes(List.of(RouteChange.add(ours.get(0)), RouteChange.add(ours.get(1))));
    assertThat(again.failed()).hasSize(2).allMatch(f -> f.error() instanceof NetlinkException.AlreadyExists);
    assertThat(again.failed().get(0).error()).hasMessageContaining("add ip route 'throw 10.128.0.0/14 table 100");

    BatchResult<RouteChange> deleted = nl.applyRoutes(ours.stream().map(RouteChange::delete).toList());
    assertThat(deleted.failed()).isEmpty();
    assertThat(ns.exec("ip", "route", "show", "table", "100")).contains("blackhole default")
        .contains("throw 10.77.0.0/16 proto static").contains("blackhole 10.78.0.0/16 proto 201")
        .doesNotContain("10.128.0.0/14").doesNotContain("192.168.1.10");
    assertThat(ns.json("ip", "-j", "-6", "route", "show", "table", "100")).isEmpty();
  }

  @Test
  void listAddressesIsWhatIpAddrShowPrints() {
    ns.exec("ip", "link", "set", "lo", "up");
    ns.exec("ip", "link", "set", "va", "up");
    ns.exec("ip", "link", "set", "vb", "up");
    ns.exec("ip", "addr", "add", "192.168.1.10/24", "dev", "va");
    ns.exec("ip", "addr", "add", "192.168.7.3/16", "dev", "va"); // a secondary address, another subnet
    ns.exec("ip", "addr", "add", "10.0.0.1", "peer", "10.0.0.2", "dev", "vb"); // point-to-point: local != address
    ns.exec("ip", "addr", "add", "2001:db8:5::7/64", "dev", "vb", "nodad");

    List<String> fromIp = new ArrayList<>();
    for (JsonNode link : ns.json("ip", "-j", "addr", "show")) {
      for (JsonNode a : link.get("addr_info")) {
        fromIp.add(a.get("local").asText() + "/" + a.get("prefixlen").asInt() + " #" + link.get("ifindex").asInt()
            + " " + a.get("scope").asText());
      }
    }
    List<String> ours = nl.listAddresses().stream()
        .map(a -> a.local().addressText() + "/" + a.prefixLength() + " #" + a.index() + " "
            + switch (a.scope()) {
              case Address.SCOPE_GLOBAL -> "global";
              case Address.SCOPE_LINK -> "link";
              case Address.SCOPE_HOST -> "host";
              default -> "?";
            })
        .toList();
    assertThat(ours).containsExactlyInAnyOrderElementsOf(fromIp);
    assertThat(ours).contains("192.168.7.3/16 #" + linkIndex("va") + " global", "10.0.0.1/32 #" + linkIndex("vb") + " global",
        "::1/128 #1 host", "127.0.0.1/8 #1 host");
    assertThat(nl.listAddresses()).filteredOn(a -> a.local().equals(p("192.168.1.10")))
        .singleElement().satisfies(a -> assertThat(a.subnet()).isEqualTo(p("192.168.1.0/24")));
  }

  private int linkIndex(String name) {
    return nl.listLinks().stream().filter(l -> l.name().equals(name)).findFirst().orElseThrow().index();
  }

  @Test
  void listLinksSeesTheVethPair() {
    List<Link> links = nl.listLinks();
    JsonNode ip = ns.json("ip", "-j", "-d", "link", "show");
    assertThat(links).hasSize(ip.size());
    for (JsonNode l : ip) {
      Link ours = links.stream().filter(x -> x.index() == l.get("ifindex").asInt()).findFirst().orElseThrow();
      assertThat(ours.name()).isEqualTo(l.get("ifname").asText());
      assertThat(ours.kind()).isEqualTo(Optional.ofNullable(l.path("linkinfo").get("info_kind")).map(JsonNode::asText));
      assertThat(ours.vrfTable()).isEmpty();
    }
    assertThat(links).extracting(Link::name, Link::kind).contains(
        org.assertj.core.groups.Tuple.tuple("lo", Optional.empty()),
        org.assertj.core.groups.Tuple.tuple("va", Optional.of("veth")),
        org.assertj.core.groups.Tuple.tuple("vb", Optional.of("veth")));
  }

  @Test
  void notificationsArriveForChangesMadeWithTheIpCommand() {
    List<ChangeEvent> events = new CopyOnWriteArrayList<>();
    try (Subscription sub = nl.subscribe(EnumSet.allOf(ChangeGroup.class), events::add)) {
      ns.exec("ip", "rule", "add", "from", "10.0.0.5", "lookup", "100", "prio", "5000", "proto", "201");
      ns.exec("ip", "-6", "rule", "add", "from", "2001:db8::5", "lookup", "100", "prio", "5000", "proto", "201");
      ns.exec("ip", "route", "add", "blackhole", "10.5.0.0/16", "table", "100", "proto", "201");
      ns.exec("ip", "link", "add", "vc", "type", "veth", "peer", "name", "vd");
      ns.exec("ip", "rule", "del", "from", "10.0.0.5", "lookup", "100", "prio", "5000", "proto", "201");

      Rule r4 = Rule.lookup(V4, 5000, 100).from(p("10.0.0.5")).protocol(201);
      await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(events).contains(
          ChangeEvent.ofRule(ChangeKind.NEW, r4),
          ChangeEvent.ofRule(ChangeKind.NEW, Rule.lookup(V6, 5000, 100).from(p("2001:db8::5")).protocol(201)),
          ChangeEvent.ofRoute(ChangeKind.NEW,
              Route.of(V4, 100, RouteType.BLACKHOLE, Optional.of(p("10.5.0.0/16"))).protocol(201)),
          ChangeEvent.ofRule(ChangeKind.DELETED, r4)));
      await().atMost(Duration.ofSeconds(5)).untilAsserted(() -> assertThat(events)
          .anySatisfy(e -> {
            assertThat(e.kind()).isEqualTo(ChangeKind.NEW);
            assertThat(e.group()).isEqualTo(ChangeGroup.LINK);
            assertThat(e.link().orElseThrow().name()).isEqualTo("vc");
            assertThat(e.link().orElseThrow().kind()).contains("veth");
          }));
      assertThat(sub.overflows()).isZero();
    }
  }

  @Test
  void aListenerMayQueryTheConnectionAndCloseItsSubscription() {
    List<Integer> ruleCounts = new CopyOnWriteArrayList<>();
    Subscription[] holder = new Subscription[1];
    holder[0] = nl.subscribe(EnumSet.of(ChangeGroup.IPV4_RULE), e -> {
      ruleCounts.add(nl.listRules(V4).size());
      holder[0].close();
    });
    ns.exec("ip", "rule", "add", "prio", "5000", "lookup", "100");
    await().atMost(Duration.ofSeconds(5)).until(() -> holder[0].isClosed() && !ruleCounts.isEmpty());
    assertThat(ruleCounts).containsExactly(4);
  }

  @Test
  void subscriptionDeliversOnlyTheGroupsAskedFor() {
    List<ChangeEvent> events = new CopyOnWriteArrayList<>();
    try (Subscription sub = nl.subscribe(EnumSet.of(ChangeGroup.IPV6_RULE), events::add)) {
      ns.exec("ip", "rule", "add", "from", "10.0.0.5", "lookup", "100", "prio", "5000");
      ns.exec("ip", "-6", "rule", "add", "from", "2001:db8::5", "lookup", "100", "prio", "5000");
      await().atMost(Duration.ofSeconds(5)).until(() -> !events.isEmpty());
      assertThat(events).allMatch(e -> e.group() == ChangeGroup.IPV6_RULE).hasSize(1);
      assertThat(sub.delivered()).isEqualTo(1);
    }
  }

  /** capget/capset, to drop CAP_NET_ADMIN from one thread (capabilities are per thread in Linux). */
  private interface Caps extends com.sun.jna.Library {
    Caps C = com.sun.jna.Native.load("c", Caps.class);

    int capget(int[] header, int[] data) throws com.sun.jna.LastErrorException;

    int capset(int[] header, int[] data) throws com.sun.jna.LastErrorException;
  }

  @Test
  void withoutCapNetAdminWritesFailAsPermissionDenied() {
    try (NetnsThread t = NetnsThread.enter(Optional.of(ns.name()))) {
      t.call(() -> {
        int[] header = {0x20080522, 0}; // _LINUX_CAPABILITY_VERSION_3, this thread
        int[] data = new int[6]; // two __user_cap_data_struct {effective, permitted, inheritable}
        Caps.C.capget(header, data);
        data[0] &= ~(1 << 12); // CAP_NET_ADMIN out of the effective set
        Caps.C.capset(header, data);
        return null;
      });
      try (RtNetlink weak = RtNetlink.open(t)) {
        Rule rule = Rule.lookup(V4, 5000, 100).from(p("10.0.0.5"));
        assertThatThrownBy(() -> weak.addRule(rule))
            .isInstanceOfSatisfying(NetlinkException.PermissionDenied.class, e -> assertThat(e.errno()).isEqualTo(1))
            .hasMessage("permission denied: CAP_NET_ADMIN is required to add ip rule '5000: from 10.0.0.5 lookup 100' in netns "
                + ns.name());
        assertThat(weak.apply(List.of(RuleChange.add(rule))).failed())
            .singleElement().extracting(BatchResult.Failure::error).isInstanceOf(NetlinkException.PermissionDenied.class);
        assertThat(weak.listRules(V4)).hasSize(3); // reading needs no capability
      }
    }
  }

  @Test
  void aConnectionOnACallerOwnedThreadLeavesTheThreadRunning() {
    try (NetnsThread t = NetnsThread.enter(Optional.of(ns.name()))) {
      try (RtNetlink other = RtNetlink.open(t)) {
        other.addRule(Rule.lookup(V4, 7000, 100).protocol(201));
        assertThat(other.describe()).isEqualTo("netns " + ns.name());
      }
      assertThat(t.call(() -> "still alive")).isEqualTo("still alive");
    }
    assertThat(nl.listRules(V4)).contains(Rule.lookup(V4, 7000, 100).protocol(201));
  }
}

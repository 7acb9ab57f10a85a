package io.egressservice.nft;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.testing.NftSetListing;
import io.egressservice.ip.IpPrefix;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The guard table in a throwaway namespace, with {@code nft -j list} as the oracle. */
class GuardNftablesNetnsTest {
  private static final GuardNftables.Shape STEERING = new GuardNftables.Shape(OptionalInt.of(4799),
      prefixes("192.168.50.11", "192.168.50.12", "fd00:50::11"),
      prefixes("192.168.50.11", "192.168.50.12", "198.51.100.7", "fd00:50::11"),
      prefixes("10.128.0.0/16", "192.168.50.11", "fd10:128::/48"));

  @RegisterExtension
  final NftNamespace nft = new NftNamespace("guard");
  private GuardNftables guard;

  @BeforeEach
  void setUp() {
    guard = new GuardNftables(nft.client());
  }

  @Test
  void withSteeringTheTableGuardsThePortTheTunnelAndOurSources() {
    guard.sync(Optional.of(STEERING), prefixes("10.128.2.5"), prefixes("10.128.1.5", "10.128.2.5", "fd10:128:1::5"),
        false);

    assertThat(elements("nodes_v4")).containsExactly("192.168.50.11", "192.168.50.12");
    assertThat(elements("nodes_v6")).containsExactly("fd00:50::11");
    assertThat(elements("node_addresses_v4")).containsExactly("192.168.50.11", "192.168.50.12", "198.51.100.7");
    assertThat(elements("steered_v4")).containsExactly("10.128.2.5");
    assertThat(elements("steered_v6")).isEmpty();
    assertThat(elements("ours_v4")).containsExactly("10.128.1.5", "10.128.2.5");
    assertThat(elements("ours_v6")).containsExactly("fd10:128:1::5");
    String input = chain("input");
    assertThat(input).contains("hook input", "iifname \"egress-vx\" counter name \"tunnel\" drop",
        "udp dport 4799 ip saddr != @nodes_v4 counter name \"port\" drop",
        "udp dport 4799 ip6 saddr != @nodes_v6 counter name \"port\" drop",
        "udp dport 4799 fib saddr . iif oif missing counter name \"port\" drop");
    String forward = chain("forward");
    assertThat(forward).contains("hook forward",
        "udp dport 4799 ip daddr @node_addresses_v4 counter name \"port\" drop",
        "iifname \"egress-vx\" ip saddr @steered_v4 ip daddr != @in_cluster_v4 accept",
        "iifname \"egress-vx\" counter name \"tunnel\" drop",
        "iifname != \"egress-vx\" ip saddr @steered_v4 ip daddr != @in_cluster_v4 ct direction original counter name"
            + " \"spoofed\" drop",
        "iifname != \"egress-vx\" ip6 saddr @ours_v6 ip6 daddr != @in_cluster_v6 ct direction original fib saddr . iif"
            + " oif missing counter name \"spoofed\" drop");
    // The tunnel's accept comes before its drop, the port's drop before both.
    assertThat(forward.indexOf("@node_addresses_v4")).isLessThan(forward.indexOf("@steered_v4 ip daddr"));
    assertThat(forward.indexOf("accept")).isLessThan(forward.indexOf("counter name \"tunnel\""));
    assertThat(forward).contains(
        "ct state new ip daddr @restarting_v4 ip saddr != @in_cluster_v4 counter name \"takeover\" drop",
        "ct state new ip6 daddr @restarting_v6 ip6 saddr != @in_cluster_v6 counter name \"takeover\" drop");
    // the sources this node steers leave only through the tunnel (their steering route may be missing a moment)
    assertThat(forward).contains(
        "oifname != \"egress-vx\" ip saddr @away_v4 ip daddr != @in_cluster_v4 ct direction original counter name"
            + " \"unsteered\" drop",
        "oifname != \"egress-vx\" ip6 saddr @away_v6 ip6 daddr != @in_cluster_v6 ct direction original counter name"
            + " \"unsteered\" drop");
    assertThat(guard.droppedPackets()).containsOnlyKeys("port", "tunnel", "spoofed", "takeover", "unsteered",
        "forged");
  }

  /**
   * The port takes a datagram only on a device that reaches the Nodes, only IPv4 in IPv4 and IPv6 in IPv6, and only
   * with an inner source its outer source's Node sends (read before decapsulation, behind UDP and VXLAN-GPE).
   */
  @Test
  void thePortAcceptsAnInnerSourceOnlyFromItsOwnNodeOnTheNodeNetwork() {
    GuardNftables.Shape shape = new GuardNftables.Shape(STEERING.steerPort(), STEERING.nodeInternalIps(),
        STEERING.nodeAddresses(), STEERING.inCluster(), List.of("eth0", "bond0"));
    guard.sync(Optional.of(shape), new GuardNftables.Sources(prefixes("10.128.2.5"), prefixes("10.128.2.5"),
        List.of(), List.of(), List.of(sender("192.168.50.12", "10.128.2.5"), sender("fd00:50::12", "fd10:128:2::5"))),
        false);

    String input = chain("input");
    assertThat(input).contains("udp dport 4799 iifname != @underlay counter name \"port\" drop",
        "udp dport 4799 meta nfproto ipv4 @th,88,8 != 0x1 counter name \"forged\" drop",
        "udp dport 4799 meta nfproto ipv6 @th,88,8 != 0x2 counter name \"forged\" drop",
        "udp dport 4799 ip saddr . @th,224,32 != @senders_v4 counter name \"forged\" drop",
        "udp dport 4799 ip6 saddr . @th,192,128 != @senders_v6 counter name \"forged\" drop");
    assertThat(plainElements("underlay")).containsExactly("bond0", "eth0");
    assertThat(pairs("senders_v4")).containsExactly("192.168.50.12 . 0xa800205");
    assertThat(pairs("senders_v6")).containsExactly("fd00:50::12 . 0xfd100128000200000000000000000005");

    // by element: one pair goes, another comes
    assertThat(guard.updateElements(
        new GuardNftables.Sources(List.of(), List.of(), List.of(), List.of(), List.of(sender("192.168.50.13", "10.128.3.5"))),
        new GuardNftables.Sources(List.of(), List.of(), List.of(), List.of(), List.of(sender("192.168.50.12", "10.128.2.5")))))
        .isTrue();
    assertThat(pairs("senders_v4")).containsExactly("192.168.50.13 . 0xa800305");
  }

  private static GuardNftables.Sender sender(String node, String inner) {
    return new GuardNftables.Sender(IpPrefix.parse(node), IpPrefix.parse(inner));
  }

  /** The elements of a concatenated set, as {@code nft list} prints them. */
  private List<String> pairs(String set) {
    return NftSetListing.elements(nft.ns().exec("nft", "list", "set", "inet", GuardNftables.TABLE, set));
  }

  private List<String> plainElements(String set) {
    TreeSet<String> out = new TreeSet<>();
    for (JsonNode item : nft.ns().json("nft", "-j", "list", "set", "inet", GuardNftables.TABLE, set).path("nftables")) {
      item.path("set").path("elem").forEach(e -> out.add(e.asText()));
    }
    return List.copyOf(out);
  }

  /**
   * While a source's flows restart, an answer still in flight for its old flow must not become a new entry from
   * outside to the source (the source's packets would run in its reply direction: no SNAT, past the guards).
   */
  @Test
  void restartingSourcesRefuseNewInboundConnectionsForAMoment() {
    guard.sync(Optional.of(STEERING), prefixes("10.128.2.5"), prefixes("10.128.1.5", "10.128.2.5"), false);

    assertThat(guard.holdNewInbound(prefixes("10.128.1.5", "fd10:128:1::5"), java.time.Duration.ofMillis(3000)))
        .isTrue();

    assertThat(elements("restarting_v4")).containsExactly("10.128.1.5");
    assertThat(elements("restarting_v6")).containsExactly("fd10:128:1::5");
    org.awaitility.Awaitility.await().atMost(java.time.Duration.ofSeconds(10))
        .until(() -> elements("restarting_v4").isEmpty() && elements("restarting_v6").isEmpty());
  }

  @Test
  void sourcesComeAndGoByElementWithoutRewritingTheTable() {
    guard.sync(Optional.of(STEERING), prefixes("10.128.2.5"), prefixes("10.128.1.5", "10.128.2.5"), false);
    long handle = tableHandle();

    assertThat(guard.updateElements(prefixes("10.128.3.5", "fd10:128:3::5"), prefixes("10.128.2.5"),
        prefixes("10.128.3.5", "fd10:128:3::5"), prefixes("10.128.2.5"))).isTrue();
    assertThat(elements("steered_v4")).containsExactly("10.128.3.5");
    assertThat(elements("steered_v6")).containsExactly("fd10:128:3::5");
    assertThat(elements("ours_v4")).containsExactly("10.128.1.5", "10.128.3.5");

    // sync with the same shape: elements only
    guard.sync(Optional.of(STEERING), List.of(), prefixes("10.128.1.5"), false);
    assertThat(elements("steered_v4")).isEmpty();
    assertThat(elements("steered_v6")).isEmpty();
    assertThat(elements("ours_v4")).containsExactly("10.128.1.5");
    assertThat(tableHandle()).as("the same table, not a rewrite").isEqualTo(handle);

    // another Node: the shape moves, the table is written whole with the current sources
    GuardNftables.Shape more = new GuardNftables.Shape(OptionalInt.of(4799),
        prefixes("192.168.50.11", "192.168.50.12", "192.168.50.13", "fd00:50::11"), STEERING.nodeAddresses(),
        STEERING.inCluster());
    guard.sync(Optional.of(more), List.of(), prefixes("10.128.1.5"), false);
    assertThat(tableHandle()).isNotEqualTo(handle);
    assertThat(elements("nodes_v4")).containsExactly("192.168.50.11", "192.168.50.12", "192.168.50.13");
    assertThat(elements("ours_v4")).containsExactly("10.128.1.5");
  }

  @Test
  void withSteeringOffOnlyOurSourcesAreGuarded() {
    GuardNftables.Shape off = new GuardNftables.Shape(OptionalInt.empty(), List.of(), List.of(),
        STEERING.inCluster());
    guard.sync(Optional.of(off), List.of(), prefixes("10.128.1.5"), false);

    assertThat(nft.ns().tryExec("nft", "list", "chain", "inet", GuardNftables.TABLE, "input").exitCode())
        .as("no input chain without a steering port").isNotZero();
    String forward = chain("forward");
    assertThat(forward).doesNotContain("dport", "iifname \"egress-vx\" counter");
    assertThat(forward).contains("ip saddr @ours_v4 ip daddr != @in_cluster_v4 ct direction original fib saddr . iif"
        + " oif missing counter name \"spoofed\" drop");
  }

  @Test
  void noShapeNoTableAndDeleteRemovesIt() {
    guard.sync(Optional.of(STEERING), List.of(), List.of(), false);
    assertThat(tablePresent()).isTrue();
    guard.sync(Optional.empty(), List.of(), List.of(), false);
    assertThat(tablePresent()).isFalse();
    assertThat(guard.updateElements(prefixes("10.128.1.5"), List.of(), List.of(), List.of()))
        .as("no table: the caller must sync").isFalse();

    guard.sync(Optional.of(STEERING), List.of(), prefixes("10.128.1.5"), false);
    guard.delete();
    assertThat(tablePresent()).isFalse();
  }

  @Test
  void aTableDeletedBySomeoneElseIsWrittenAgainOnVerify() {
    guard.sync(Optional.of(STEERING), List.of(), prefixes("10.128.1.5"), false);
    nft.ns().exec("nft", "delete", "table", "inet", GuardNftables.TABLE);

    guard.sync(Optional.of(STEERING), List.of(), prefixes("10.128.1.5"), true);

    assertThat(elements("ours_v4")).containsExactly("10.128.1.5");
  }

  // ---- helpers ------------------------------------------------------------------------------------

  private static List<IpPrefix> prefixes(String... p) {
    List<IpPrefix> out = new ArrayList<>();
    for (String s : p) {
      out.add(IpPrefix.parse(s));
    }
    return out;
  }

  private boolean tablePresent() {
    return nft.ns().tryExec("nft", "list", "table", "inet", GuardNftables.TABLE).exitCode() == 0;
  }

  private long tableHandle() {
    for (JsonNode item : nft.ns().json("nft", "-j", "-a", "list", "tables").path("nftables")) {
      JsonNode t = item.path("table");
      if (t.path("name").asText().equals(GuardNftables.TABLE)) {
        return t.path("handle").asLong();
      }
    }
    throw new AssertionError("no table " + GuardNftables.TABLE);
  }

  private List<String> elements(String set) {
    TreeSet<String> out = new TreeSet<>();
    for (JsonNode item : nft.ns().json("nft", "-j", "list", "set", "inet", GuardNftables.TABLE, set).path("nftables")) {
      // an element with a timeout lists as {"elem": {"val": ..., "timeout": ..., "expires": ...}}
      item.path("set").path("elem").forEach(e -> out.add(e.isObject() ? e.path("elem").path("val").asText() : e.asText()));
    }
    return List.copyOf(out);
  }

  private String chain(String name) {
    return nft.ns().exec("nft", "list", "chain", "inet", GuardNftables.TABLE, name);
  }
}

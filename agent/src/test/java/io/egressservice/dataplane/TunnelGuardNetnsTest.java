package io.egressservice.dataplane;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.ip.IpPrefix;
import io.egressservice.nft.GuardNftables;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.ObjectRef;
import io.egressservice.model.PlanConfig;
import io.egressservice.model.RuleMode;
import io.egressservice.plan.ServiceOutcome;
import io.egressservice.plan.SnatEntry;
import io.egressservice.model.SteeringConfig;
import io.egressservice.plan.SteeringPeers;
import io.egressservice.plan.SteeringPlan;
import io.egressservice.plan.TunnelSender;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The guard table as the dataplane writes it, on the real kernel: from a full reconcile, by element on the fast
 * path (one service's steered-in endpoint moves: no rewrite), absent with steering off and nothing opted in, and
 * gone after {@code cleanup}.
 */
class TunnelGuardNetnsTest {
  static final int PRIORITY = 5000;
  static final int PROTOCOL = 201;
  static final List<IpPrefix> IN_CLUSTER = List.of(IpPrefix.parse("10.244.0.0/16"), IpPrefix.parse("192.168.50.11"));
  static final SteeringPeers PEERS = new SteeringPeers(true,
      List.of(IpPrefix.parse("192.168.50.11"), IpPrefix.parse("192.168.50.12")),
      List.of(IpPrefix.parse("192.168.50.11"), IpPrefix.parse("192.168.50.12"), IpPrefix.parse("198.51.100.12")));
  static final IpPrefix LB = IpPrefix.parse("192.0.2.10");
  static final ObjectRef WEB = new ObjectRef("default", "web");
  static final ObjectRef DB = new ObjectRef("default", "db");

  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("guard");
  Netns ns;
  Dataplane dp;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    dp = kernel.closeLater(Dataplane.open(LinuxKernel.open(Optional.of(ns.name())), PRIORITY, PROTOCOL));
  }

  /** The host of web and db: its own endpoint 10.244.1.5 (web) and the given steered-in ones, all SNATed. */
  static DesiredState host(SteeringPeers peers, List<String> webIn, List<String> dbIn) {
    return host(peers, webIn, dbIn, List.of());
  }

  /** As {@link #host(SteeringPeers, List, List)}, with the pairs web's steering port accepts. */
  static DesiredState host(SteeringPeers peers, List<String> webIn, List<String> dbIn, List<TunnelSender> webSenders) {
    List<SnatEntry> snat = new ArrayList<>();
    snat.add(new SnatEntry(IpPrefix.parse("10.244.1.5"), LB, WEB));
    webIn.forEach(s -> snat.add(new SnatEntry(IpPrefix.parse(s), LB, WEB)));
    dbIn.forEach(s -> snat.add(new SnatEntry(IpPrefix.parse(s), LB, DB)));
    snat.sort(SnatEntry.ORDER);
    List<ServiceOutcome> outcomes = List.of(
        new ServiceOutcome(DB, true, "host", List.of(), List.of(), List.of(), dbIn),
        new ServiceOutcome(WEB, true, "host", List.of(), List.of(), List.of(), webIn, webSenders));
    SteeringPlan steering = new SteeringPlan(List.of(), List.of(), !webIn.isEmpty() || !dbIn.isEmpty(),
        SteeringConfig.DEFAULT_PORT, peers);
    return DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL)
        .snat(snat).inCluster(IN_CLUSTER).services(outcomes).ruleMode(RuleMode.SOURCE)
        .markMask(PlanConfig.DEFAULT_MARK_MASK)
        .steering(steering).build();
  }

  @Test
  void aFullReconcileWritesTheNodesOurSourcesAndTheSteeredInOnes() {
    assertThat(dp.reconcile(host(PEERS, List.of("10.244.2.5"), List.of("10.244.3.5"))).failures()).isEmpty();

    assertThat(elements("nodes_v4")).containsExactly("192.168.50.11", "192.168.50.12");
    assertThat(elements("node_addresses_v4")).contains("198.51.100.12");
    assertThat(elements("steered_v4")).containsExactly("10.244.2.5", "10.244.3.5");
    assertThat(elements("ours_v4")).containsExactly("10.244.1.5", "10.244.2.5", "10.244.3.5");
  }

  @Test
  void theFastPathMovesOneServicesSourcesByElement() {
    DesiredState before = host(PEERS, List.of("10.244.2.5"), List.of("10.244.3.5"));
    assertThat(dp.reconcile(before).failures()).isEmpty();
    long handle = tableHandle();
    long fastPaths = dp.fastPathStats().fastPaths();

    DesiredState after = host(PEERS, List.of("10.244.2.6"), List.of("10.244.3.5"));
    assertThat(dp.reconcileChanged(before, after, Set.of(WEB)).failures()).isEmpty();

    assertThat(dp.fastPathStats().fastPaths()).as("the fast path was taken").isEqualTo(fastPaths + 1);
    assertThat(elements("steered_v4")).containsExactly("10.244.2.6", "10.244.3.5");
    assertThat(elements("ours_v4")).containsExactly("10.244.1.5", "10.244.2.6", "10.244.3.5");
    assertThat(tableHandle()).as("elements changed, the table was not rewritten").isEqualTo(handle);
  }

  @Test
  void withSteeringOffTheTableIsThereOnlyWhileSomeSourceIsOurs() {
    DesiredState none = DesiredState.builder().node("node-a").priority(PRIORITY).ruleProtocol(PROTOCOL)
        .inCluster(IN_CLUSTER).ruleMode(RuleMode.SOURCE)
        .markMask(PlanConfig.DEFAULT_MARK_MASK)
        .steering(SteeringPlan.none(SteeringConfig.DEFAULT_PORT)).build();
    assertThat(dp.reconcile(none).failures()).isEmpty();
    assertThat(tablePresent()).as("steering off, nothing opted in: no table").isFalse();

    assertThat(dp.reconcile(host(SteeringPeers.NONE, List.of(), List.of())).failures()).isEmpty();
    assertThat(tablePresent()).isTrue();
    assertThat(ns.exec("nft", "list", "table", "inet", GuardNftables.TABLE)).doesNotContain("dport", "chain input");
    assertThat(elements("ours_v4")).containsExactly("10.244.1.5");
  }

  /** The port takes datagrams only on the devices this node routes the other Nodes through: not lo, not an uplink. */
  @Test
  void thePortListensOnlyOnTheDevicesThatReachTheNodes() {
    ns.exec("ip", "link", "add", "nodenet", "type", "veth", "peer", "name", "nodenet-p");
    ns.exec("ip", "link", "set", "nodenet-p", "up");
    ns.exec("ip", "link", "set", "nodenet", "up");
    ns.exec("ip", "addr", "add", "192.168.50.11/24", "dev", "nodenet");
    ns.exec("ip", "link", "add", "up1", "type", "veth", "peer", "name", "up1-p");
    ns.exec("ip", "link", "set", "up1-p", "up");
    ns.exec("ip", "link", "set", "up1", "up");
    ns.exec("ip", "addr", "add", "198.51.100.11/24", "dev", "up1");
    ns.exec("ip", "route", "add", "default", "via", "198.51.100.1", "dev", "up1");
    dp.invalidateFacts();

    assertThat(dp.reconcile(host(PEERS, List.of("10.244.2.5"), List.of())).failures()).isEmpty();

    assertThat(elements("underlay")).as("node-b is reached on nodenet; node-a's own address adds nothing")
        .containsExactly("nodenet");
    assertThat(ns.exec("nft", "list", "chain", "inet", GuardNftables.TABLE, "input"))
        .contains("udp dport 4799 iifname != @underlay counter name \"port\" drop");
  }

  @Test
  void cleanupRemovesTheGuardTable() {
    assertThat(dp.reconcile(host(PEERS, List.of("10.244.2.5"), List.of())).failures()).isEmpty();
    assertThat(tablePresent()).isTrue();

    assertThat(dp.cleanup().failures()).isEmpty();

    assertThat(tablePresent()).isFalse();
  }

  private boolean tablePresent() {
    return ns.tryExec("nft", "list", "table", "inet", GuardNftables.TABLE).exitCode() == 0;
  }

  private long tableHandle() {
    for (JsonNode item : ns.json("nft", "-j", "-a", "list", "tables").path("nftables")) {
      if (item.path("table").path("name").asText().equals(GuardNftables.TABLE)) {
        return item.path("table").path("handle").asLong();
      }
    }
    throw new AssertionError("no table " + GuardNftables.TABLE);
  }

  private List<String> elements(String set) {
    TreeSet<String> out = new TreeSet<>();
    for (JsonNode item : ns.json("nft", "-j", "list", "set", "inet", GuardNftables.TABLE, set).path("nftables")) {
      item.path("set").path("elem").forEach(e -> out.add(e.asText()));
    }
    return List.copyOf(out);
  }
}

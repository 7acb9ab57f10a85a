package io.egressservice.dataplane;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.testing.NftSetListing;
import io.egressservice.nft.GuardNftables;
import io.egressservice.ip.IpPrefix;
import io.egressservice.plan.DesiredState;
import io.egressservice.plan.TunnelSender;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * The tunnel lets out the LB IP of a service steered here only while a planned move hands it over: the old host's own
 * pod's flow was SNATed to the LB IP before the old host switched it to steering, and its packets arrive here with
 * that source, from the old host's address, until the old host restarts the flow (PlannedMoveClusterTest). Outside a
 * move no Node sends it (a forged datagram with the LB IP inside did leave through the main uplink), and during one
 * only from the old host's address.
 */
class TunnelLetsOutReceivedLbIpsNetnsTest {
  static final IpPrefix NODE_B = IpPrefix.parse("192.168.50.12");
  static final IpPrefix POD_B = IpPrefix.parse("10.244.2.5");

  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("guardlb");
  Netns ns;
  Dataplane dp;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    dp = kernel.closeLater(
        Dataplane.open(LinuxKernel.open(Optional.of(ns.name())), TunnelGuardNetnsTest.PRIORITY, TunnelGuardNetnsTest.PROTOCOL));
  }

  @Test
  void theTunnelLetsOutTheLbIpOnlyWhileAPlannedMoveHandsItOver() {
    TunnelSender podFromB = new TunnelSender(NODE_B, POD_B, false);
    DesiredState steeredHere = TunnelGuardNetnsTest.host(TunnelGuardNetnsTest.PEERS, List.of(POD_B.addressText()),
        List.of(), List.of(podFromB));
    assertThat(dp.reconcile(steeredHere).failures()).isEmpty();
    assertThat(elements("received_v4")).as("steered here, no move under way: no Node sends the LB IP").isEmpty();
    assertThat(pairs("senders_v4")).containsExactly("192.168.50.12 . 0xaf40205");

    DesiredState moving = TunnelGuardNetnsTest.host(TunnelGuardNetnsTest.PEERS, List.of(POD_B.addressText()),
        List.of(), List.of(podFromB, new TunnelSender(NODE_B, TunnelGuardNetnsTest.LB, true)));
    assertThat(dp.reconcileChanged(steeredHere, moving, Set.of(TunnelGuardNetnsTest.WEB)).failures()).isEmpty();
    assertThat(elements("received_v4")).containsExactly(TunnelGuardNetnsTest.LB.addressText());
    assertThat(pairs("senders_v4")).as("the LB IP from the old host's address only")
        .containsExactly("192.168.50.12 . 0xaf40205", "192.168.50.12 . 0xc000020a");
    assertThat(ns.exec("nft", "list", "chain", "inet", GuardNftables.TABLE, "forward"))
        .contains("iifname \"egress-vx\" ip saddr @received_v4 ip daddr != @in_cluster_v4 accept");

    assertThat(dp.reconcileChanged(moving, steeredHere, Set.of(TunnelGuardNetnsTest.WEB)).failures()).isEmpty();
    assertThat(elements("received_v4")).as("the move is over").isEmpty();
    assertThat(pairs("senders_v4")).containsExactly("192.168.50.12 . 0xaf40205");

    assertThat(dp.reconcile(moving).failures()).isEmpty();
    assertThat(elements("received_v4")).as("a full reconcile").containsExactly(TunnelGuardNetnsTest.LB.addressText());
  }

  private List<String> pairs(String set) {
    return NftSetListing.elements(ns.exec("nft", "list", "set", "inet", GuardNftables.TABLE, set));
  }

  private List<String> elements(String set) {
    TreeSet<String> out = new TreeSet<>();
    for (JsonNode item : ns.json("nft", "-j", "list", "set", "inet", GuardNftables.TABLE, set).path("nftables")) {
      item.path("set").path("elem").forEach(e -> out.add(e.asText()));
    }
    return List.copyOf(out);
  }
}

package io.egressservice.dataplane;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.nft.GuardNftables;
import io.egressservice.plan.DesiredState;
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
 * The tunnel lets out the LB IPs of the services other nodes steer here, and only while they do: in a host move, the
 * old host's own pod's flow was SNATed to the LB IP before the old host switched it to steering, and its packets
 * arrive here with that source until the old host restarts the flow (PlannedMoveClusterTest: dropped as "tunnel",
 * they were its only steered losses). The LB IP of a service whose endpoints are all local is not let out.
 */
class TunnelLetsOutReceivedLbIpsNetnsTest {
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("guardlb");
  Netns ns;
  Dataplane dp;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    dp = kernel.closeLater(
        Dataplane.open(Optional.of(ns.name()), TunnelGuardNetnsTest.PRIORITY, TunnelGuardNetnsTest.PROTOCOL));
  }

  @Test
  void theTunnelLetsOutTheLbIpOnlyOfServicesSteeredHere() {
    DesiredState alone = TunnelGuardNetnsTest.host(TunnelGuardNetnsTest.PEERS, List.of(), List.of());
    assertThat(dp.reconcile(alone).failures()).isEmpty();
    assertThat(elements("received_v4")).as("web's endpoints are all here: its LB IP does not come by the tunnel")
        .isEmpty();

    DesiredState steeredHere = TunnelGuardNetnsTest.host(TunnelGuardNetnsTest.PEERS, List.of("10.244.2.5"), List.of());
    assertThat(dp.reconcileChanged(alone, steeredHere, Set.of(TunnelGuardNetnsTest.WEB)).failures()).isEmpty();
    assertThat(elements("received_v4")).containsExactly(TunnelGuardNetnsTest.LB.addressText());
    assertThat(ns.exec("nft", "list", "chain", "inet", GuardNftables.TABLE, "forward"))
        .contains("iifname \"egress-vx\" ip saddr @received_v4 ip daddr != @in_cluster_v4 accept");

    assertThat(dp.reconcileChanged(steeredHere, alone, Set.of(TunnelGuardNetnsTest.WEB)).failures()).isEmpty();
    assertThat(elements("received_v4")).as("no longer steered here").isEmpty();

    assertThat(dp.reconcile(steeredHere).failures()).isEmpty();
    assertThat(elements("received_v4")).as("a full reconcile").containsExactly(TunnelGuardNetnsTest.LB.addressText());
  }

  private List<String> elements(String set) {
    TreeSet<String> out = new TreeSet<>();
    for (JsonNode item : ns.json("nft", "-j", "list", "set", "inet", GuardNftables.TABLE, set).path("nftables")) {
      item.path("set").path("elem").forEach(e -> out.add(e.asText()));
    }
    return List.copyOf(out);
  }
}

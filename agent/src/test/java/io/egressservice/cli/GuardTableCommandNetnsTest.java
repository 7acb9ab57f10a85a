package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.testing.NetnsFixture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/** {@code apply} writes the guard table with the Nodes of the objects; {@code cleanup} removes it. */
class GuardTableCommandNetnsTest {
  static final String GUARD = "egress_service_agent_guard";
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("cliguard");

  @Test
  void applyGuardsTheSteeringPortAndCleanupRemovesTheTable() {
    InProcess.Result apply = InProcess.run("apply", "--objects", "examples", "--node", "node-a", "--netns",
        kernel.ns().name());
    assertThat(apply.exit()).as(apply.err()).isZero();
    assertThat(kernel.ns().exec("nft", "list", "set", "inet", GUARD, "nodes_v4")).contains("192.168.1.10");
    assertThat(kernel.ns().exec("nft", "list", "chain", "inet", GUARD, "input")).contains("udp dport 4799");

    InProcess.Result cleanup = InProcess.run("cleanup", "--netns", kernel.ns().name());
    assertThat(cleanup.exit()).as(cleanup.err()).isZero();
    assertThat(cleanup.out()).contains(GUARD);
    assertThat(kernel.ns().tryExec("nft", "list", "table", "inet", GUARD).exitCode()).isNotZero();
  }
}

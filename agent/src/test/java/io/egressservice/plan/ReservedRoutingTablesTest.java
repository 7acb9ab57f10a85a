package io.egressservice.plan;

import static io.egressservice.plan.Fixture.ep;
import static io.egressservice.plan.Fixture.outcome;
import static io.egressservice.plan.SourceIpBy.LOAD_BALANCER_IP;
import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.dataplane.NetworkResolver;
import io.egressservice.dataplane.RtTables;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code network: local | main | default | 253 | 254} and non-ASCII digits ({@code ٢٥٤}
 * parsed as 254) were accepted; the service reported "routed" while its traffic used main.
 */
class ReservedRoutingTablesTest {
  static final String NODE = "node-a";

  static Fixture web(String network) {
    return Fixture.cluster()
        .node(NODE, List.of("192.168.1.10"), "10.128.0.0/24")
        .egress("web", LOAD_BALANCER_IP, network, NODE)
        .lbService("web", List.of("172.30.0.10"), "5.5.5.5")
        .slice("web", "web-1", "IPv4", ep("10.128.0.5", NODE));
  }

  @ParameterizedTest
  @ValueSource(strings = {"0", "253", "254", "255", "local", "main", "default", "unspec"})
  void theKernelsOwnTablesAreRefusedByNumberAndByName(String network) {
    for (Fixture f : List.of(web(network), web(network).offline())) {
      DesiredState s = f.plan(NODE);
      ServiceOutcome o = outcome(s, "web");

      assertThat(o.configured()).isFalse();
      assertThat(o.reason()).startsWith("network '" + network + "'").contains("table").contains("not an egress network");
      assertThat(s.rules()).isEmpty();
      assertThat(s.snat()).isEmpty();
    }
  }

  @ParameterizedTest
  @ValueSource(strings = {"٢٥٤", "１００", "२५४"})
  void onlyAsciiDigitsMakeATableNumber(String network) {
    DesiredState s = web(network).plan(NODE);

    assertThat(s.rules()).isEmpty();
    // Neither a table number nor a name the CRD's pattern allows: refused for its spelling, on every node.
    assertThat(outcome(s, "web").reason()).startsWith(NetworkNames.INVALID + "'" + network + "' is neither a table"
        + " number");
  }

  @ParameterizedTest
  @ValueSource(strings = {"mymain", "my.main"})
  void aNameResolvingToAReservedTableIsRefused(String name, @TempDir Path dir) throws Exception {
    Path rtTables = dir.resolve("rt_tables");
    Files.writeString(rtTables, "254\tmain\n254\tmymain\n254\tmy.main\n");
    NetworkResolution resolved = NetworkResolver.resolve(List.of(name), List.of(), RtTables.read(List.of(rtTables)));
    assertThat(resolved.tables()).containsEntry(name, 254L); // a name, looked up as one

    Fixture f = web(name).networkName(name, 254);

    assertThat(outcome(f.plan(NODE), "web").reason()).isEqualTo("network '" + name + "' resolves to the kernel's"
        + " 'main' table (254), not an egress network");
  }
}

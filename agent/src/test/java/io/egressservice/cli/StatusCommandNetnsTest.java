package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

/**
 * {@code status} without objects listed the ClusterIP rules (and those of
 * sourceIPBy Network services) under "service unknown"; it now says what the kernel alone tells.
 */
class StatusCommandNetnsTest {
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("status");
  Netns ns;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
    InProcess.Result apply = InProcess.run("apply", "--objects", "examples", "--node", "node-a", "--netns", ns.name());
    assertThat(apply.exit()).as(apply.err()).isZero();
  }

  @Test
  void withoutObjectsRulesWithoutSnatAreGroupedByTableAndTheNoteSuggestsObjects() {
    InProcess.Result r = InProcess.run("status", "--netns", ns.name());

    assertThat(r.exit()).isZero();
    assertThat(r.out()).doesNotContain("service unknown")
        .contains("(table 100: sources the kernel does not name; default/web also routes to this table)\n"
            + "  rule 5000: from 172.30.0.10 lookup 100 proto 201\n"
            + "  rule 5000: from fd02::10 lookup 100 proto 201\n")
        .contains("(table 101: sources the kernel does not name)\n"
            + "  rule 5000: from 10.128.0.20 lookup 101 proto 201\n"
            + "  rule 5000: from 172.30.0.20 lookup 101 proto 201\n")
        .contains("default/web\n  rule 5000: from 10.128.0.5 lookup 100 proto 201\n")
        .contains("note: 4 rule(s) have no SNAT entry to name their service")
        .contains("give --objects PATH... --node NODE to name them");
  }

  @Test
  void withTheServiceCidrTheClusterIpsAreLabelledAsSuch() throws Exception {
    InProcess.Result text = InProcess.run("status", "--netns", ns.name(), "--service-cidr", "172.30.0.0/16,fd02::/112");
    assertThat(text.out().lines().filter(l -> l.endsWith("(a ClusterIP: in --service-cidr)")))
        .containsExactly("  rule 5000: from 172.30.0.10 lookup 100 proto 201  (a ClusterIP: in --service-cidr)",
            "  rule 5000: from fd02::10 lookup 100 proto 201  (a ClusterIP: in --service-cidr)",
            "  rule 5000: from 172.30.0.20 lookup 101 proto 201  (a ClusterIP: in --service-cidr)");

    JsonNode json = new ObjectMapper().readTree(InProcess.run("status", "--netns", ns.name(), "-o", "json",
        "--service-cidr", "172.30.0.0/16,fd02::/112").out());
    List<String> groups = new ArrayList<>();
    for (JsonNode g : json.path("services")) {
      List<String> clusterIps = new ArrayList<>();
      g.path("rules").forEach(rule -> {
        if (rule.path("clusterIP").asBoolean()) {
          clusterIps.add(rule.path("from").asText());
        }
      });
      groups.add(g.path("named").asBoolean() + " " + g.path("table").asText("-") + " " + clusterIps);
    }
    // No "(in-cluster)" group of rules: the in-cluster destinations are throw routes (the "routes" field).
    assertThat(groups).containsExactly("false 100 [172.30.0.10, fd02::10]", "false 101 [172.30.0.20]", "true - []");
    assertThat(json.path("routes")).isNotEmpty();
  }

  @Test
  void withObjectsEveryRuleIsNamed() {
    InProcess.Result r = InProcess.run("status", "--netns", ns.name(), "--objects", "examples", "--node", "node-a");
    assertThat(r.out()).doesNotContain("sources the kernel does not name", "note: ")
        .contains("default/reports\n  rule 5000: from 10.128.0.20 lookup 101 proto 201\n"
            + "  rule 5000: from 172.30.0.20 lookup 101 proto 201\n");
  }
}

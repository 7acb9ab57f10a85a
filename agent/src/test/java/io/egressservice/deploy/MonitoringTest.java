package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.egressservice.buildinfo.BuildInfo;
import io.egressservice.informers.SilentWatches;
import io.egressservice.metrics.AgentMetrics;
import io.egressservice.metrics.AllocatorMetrics;
import io.egressservice.metrics.ApiWatchMetrics;
import io.egressservice.metrics.RuntimeMetrics;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.prometheus.metrics.model.snapshots.CounterSnapshot;
import io.prometheus.metrics.model.snapshots.HistogramSnapshot;
import io.prometheus.metrics.model.snapshots.InfoSnapshot;
import io.prometheus.metrics.model.snapshots.MetricSnapshot;
import io.prometheus.metrics.model.snapshots.SummarySnapshot;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * The monitoring component ({@code deploy/components/monitoring}): every metric an alert or a dashboard panel
 * uses is one that a real registry of the agent exposes; the rules pass {@code promtool check rules} and their
 * unit tests ({@code src/test/resources/monitoring/alerts-test.yaml}) where promtool is installed (Debian's
 * {@code prometheus} package; skipped with the reason elsewhere); every alert has its runbook in
 * {@code docs/operate.md}. The absence alerts (group {@code egress-service-agent-absence}) read what Prometheus
 * ({@code up}) and kube-state-metrics see of the agent, not its own series: they are checked to select the
 * agent's job or workloads instead.
 */
class MonitoringTest {
  private static final Path ROOT = Path.of("").toAbsolutePath();
  private static final Path MONITORING = ROOT.resolve("deploy/components/monitoring");
  private static final Path RULES = MONITORING.resolve("prometheusrule.yaml");
  private static final Path DASHBOARD = MONITORING.resolve("dashboards/egress-service-agent.json");
  private static final Pattern OUR_METRIC = Pattern.compile("\\b((?:egress_service_agent|jvm|process)_[a-z0-9_]+)\\b");
  private static final YAMLMapper YAML = new YAMLMapper();
  private static final String ABSENCE_GROUP = "egress-service-agent-absence";
  /** What selects the agent in a series that is not its own: the PodMonitor's job, the DaemonSet, the Deployment. */
  private static final Pattern OUR_WORKLOAD = Pattern.compile(
      "job=\"egress-service-agent\"|daemonset=\"egress-service-agent\"|deployment=\"egress-service-allocator\"");

  /** Every sample name the node agent's and the allocator's processes expose, from their real registries. */
  static Set<String> exposedNames() {
    AgentMetrics agent = new AgentMetrics();
    // read from the kernel's counters on scrape, registered by run (RunCommand) with its dataplane
    agent.noHostDrops(Map::of);
    agent.guardDrops(Map::of);
    PrometheusRegistry node = agent.registry();
    RuntimeMetrics.register(node, BuildInfo.current());
    PrometheusRegistry allocator = new AllocatorMetrics().registry();
    RuntimeMetrics.register(allocator, BuildInfo.current());
    try (SilentWatches watches = new SilentWatches(SilentWatches.DEFAULT_IDLE)) {
      // both processes register them next to their own metrics (run and allocator)
      ApiWatchMetrics.register(node, watches);
      ApiWatchMetrics.register(allocator, watches);
    }
    Set<String> names = new TreeSet<>();
    for (PrometheusRegistry registry : List.of(node, allocator)) {
      for (MetricSnapshot s : registry.scrape()) {
        String n = s.getMetadata().getPrometheusName();
        if (s instanceof CounterSnapshot) {
          names.add(n + "_total");
        } else if (s instanceof HistogramSnapshot) {
          names.addAll(List.of(n + "_bucket", n + "_count", n + "_sum"));
        } else if (s instanceof SummarySnapshot) {
          names.addAll(List.of(n, n + "_count", n + "_sum"));
        } else if (s instanceof InfoSnapshot) {
          names.add(n + "_info");
        } else {
          names.add(n);
        }
      }
    }
    return names;
  }

  /** alert name -> expression, of the absence group ({@code absence} true) or of the other groups. */
  static Map<String, String> alerts(boolean absence) throws IOException {
    Map<String, String> alerts = new TreeMap<>();
    for (JsonNode group : YAML.readTree(RULES.toFile()).path("spec").path("groups")) {
      if (ABSENCE_GROUP.equals(group.path("name").asText()) != absence) {
        continue;
      }
      for (JsonNode rule : group.path("rules")) {
        alerts.put(rule.path("alert").asText(), rule.path("expr").asText());
      }
    }
    return alerts;
  }

  static Map<String, String> alerts() throws IOException {
    Map<String, String> all = new TreeMap<>(alerts(false));
    all.putAll(alerts(true));
    return all;
  }

  /** panel title -> its expressions. */
  static Map<String, List<String>> panels() throws IOException {
    Map<String, List<String>> panels = new TreeMap<>();
    for (JsonNode panel : new ObjectMapper().readTree(DASHBOARD.toFile()).path("panels")) {
      for (JsonNode target : panel.path("targets")) {
        panels.computeIfAbsent(panel.path("title").asText(), t -> new ArrayList<>()).add(target.path("expr").asText());
      }
    }
    return panels;
  }

  private static Set<String> metricsIn(String expr) {
    Set<String> names = new TreeSet<>();
    Matcher m = OUR_METRIC.matcher(expr);
    while (m.find()) {
      names.add(m.group(1));
    }
    return names;
  }

  @Test
  void everyMetricOfAnAlertOrAPanelIsExposed() throws IOException {
    Set<String> exposed = exposedNames();
    assertThat(exposed).contains("egress_service_agent_build_info", "egress_service_agent_host_moves_total",
        "jvm_memory_used_bytes", "process_resident_memory_bytes");
    Map<String, Set<String>> missing = new TreeMap<>();
    Map<String, List<String>> uses = new TreeMap<>();
    alerts(false).forEach((alert, expr) -> uses.put("alert " + alert, List.of(expr)));
    panels().forEach((panel, exprs) -> uses.put("panel " + panel, exprs));
    assertThat(uses.keySet()).as("alerts and panels").hasSizeGreaterThan(15);
    uses.forEach((where, exprs) -> {
      Set<String> used = new TreeSet<>();
      exprs.forEach(e -> used.addAll(metricsIn(e)));
      assertThat(used).as("%s uses a metric of ours", where).isNotEmpty();
      used.removeAll(exposed);
      if (!used.isEmpty()) {
        missing.put(where, used);
      }
    });
    assertThat(missing).as("metrics used but exposed by no registry of the agent").isEmpty();
  }

  @Test
  void absenceAlertsSelectTheAgentInSeriesThatAreNotItsOwn() throws IOException {
    Map<String, String> absence = alerts(true);
    assertThat(absence.keySet()).as("alerts for an agent or allocator that exports nothing").contains(
        "EgressServiceAgentDown", "EgressServiceAgentMissing", "EgressServiceAgentDaemonSetNotReady");
    assertThat(alerts(false)).as("the allocator without a leader, also when no replica is scraped")
        .hasEntrySatisfying("EgressServiceAllocatorNoLeader", expr -> assertThat(expr)
            .contains("kube_deployment_spec_replicas{deployment=\"egress-service-allocator\"}"));
    absence.forEach((alert, expr) -> {
      assertThat(metricsIn(expr)).as("%s reads no series of the agent's own (there are none when it is gone)", alert)
          .isEmpty();
      assertThat(OUR_WORKLOAD.matcher(expr).find()).as("%s selects the agent's job or workload: %s", alert, expr)
          .isTrue();
    });
  }

  @Test
  void everyAlertHasARunbookInOperateMd() throws IOException {
    String operate = Files.readString(ROOT.resolve("docs/operate.md"));
    for (JsonNode group : YAML.readTree(RULES.toFile()).path("spec").path("groups")) {
      for (JsonNode rule : group.path("rules")) {
        String alert = rule.path("alert").asText();
        assertThat(operate).as("a runbook section for %s in docs/operate.md", alert)
            .containsPattern("(?m)^### " + alert + "$");
        assertThat(rule.path("annotations").path("runbook_url").asText())
            .endsWith("docs/operate.md#" + alert.toLowerCase(java.util.Locale.ROOT));
        assertThat(rule.path("labels").path("severity").asText()).isIn("info", "warning", "critical");
      }
    }
  }

  @Test
  void promtoolChecksTheRulesAndTheirUnitTests() throws Exception {
    Path dir = ROOT.resolve("target/monitoring-test");
    Files.createDirectories(dir);
    JsonNode spec = YAML.readTree(RULES.toFile()).path("spec");
    Files.writeString(dir.resolve("rules.yaml"), YAML.writeValueAsString(spec));
    JsonNode bare = spec.deepCopy();
    bare.path("groups").forEach(g -> g.path("rules").forEach(r -> ((ObjectNode) r).remove("annotations")));
    Files.writeString(dir.resolve("rules-for-tests.yaml"), YAML.writeValueAsString(bare));
    Files.copy(ROOT.resolve("agent/src/test/resources/monitoring/alerts-test.yaml"), dir.resolve("alerts-test.yaml"),
        java.nio.file.StandardCopyOption.REPLACE_EXISTING);

    String check = promtool(dir, "check", "rules", "rules.yaml");
    System.out.println("promtool check rules:\n" + check);
    assertThat(check).contains("SUCCESS: " + alerts().size() + " rules found");
    String test = promtool(dir, "test", "rules", "alerts-test.yaml");
    System.out.println("promtool test rules:\n" + test);
    assertThat(test).contains("SUCCESS");
  }

  private static String promtool(Path dir, String... args) throws Exception {
    List<String> command = new ArrayList<>(List.of("promtool"));
    command.addAll(List.of(args));
    Process p;
    try {
      p = new ProcessBuilder(command).directory(dir.toFile()).redirectErrorStream(true).start();
    } catch (IOException e) {
      Assumptions.assumeTrue(false, "promtool is not installed (" + e.getMessage()
          + "): apt-get install prometheus (scripts/setup.sh does) to check the rules");
      throw e;
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertThat(p.waitFor(60, TimeUnit.SECONDS)).as("promtool finished").isTrue();
    assertThat(p.exitValue()).as("%s:\n%s", String.join(" ", command), out).isZero();
    return out;
  }
}

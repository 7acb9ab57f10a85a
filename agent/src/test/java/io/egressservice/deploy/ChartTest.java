package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import com.marcnuri.helm.LintResult;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.Function;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * charts/egress-service-agent, through Helm's own lint and template (in-process): it passes {@code helm lint
 * --strict}; each preset renders exactly the objects kustomize renders from deploy/ with the matching components
 * (one installation, two ways to write it down; only Helm's own labels and the CRD's keep policy differ), and
 * every preset passes the RBAC, probe and securityContext checks of deploy/ ({@link ManifestChecks}).
 */
class ChartTest {
  private static final ObjectMapper JSON =
      new ObjectMapper().configure(com.fasterxml.jackson.databind.SerializationFeature.ORDER_MAP_ENTRIES_BY_KEYS, true);
  /** What Helm adds and kustomize does not: the chart's and release's labels (metadata only, never selectors). */
  private static final List<String> HELM_LABELS = List.of("helm.sh/chart", "app.kubernetes.io/managed-by",
      "app.kubernetes.io/instance", "app.kubernetes.io/version");

  /** A preset: the chart's values and the deploy/ components that install the same. */
  record Preset(String name, Map<String, Object> values, List<String> components) {}

  static final List<Preset> PRESETS = List.of(
      new Preset("default", Map.of(), List.of()),
      new Preset("monitoring", Map.of("monitoring.enabled", true), List.of("monitoring")),
      new Preset("ovn-kubernetes (upstream)", Map.of("ovnKubernetes.enabled", true), List.of("ovn-kubernetes")),
      new Preset("openshift 4.14+", Map.of("ovnKubernetes.enabled", true, "ovnKubernetes.masqueradePreset", "openshift",
          "openshift.enabled", true), List.of("ovn-kubernetes-openshift", "openshift")),
      new Preset("openshift 4.14+ with monitoring", Map.of("ovnKubernetes.enabled", true,
          "ovnKubernetes.masqueradePreset", "openshift", "openshift.enabled", true, "monitoring.enabled", true),
          List.of("ovn-kubernetes-openshift", "openshift", "monitoring")),
      // policy.asHook=false: helm-java's template leaves hooks out, as `helm install` applies them after the rest
      new Preset("networks granted per namespace", Map.of("policy.enabled", true, "policy.asHook", false),
          List.of("tenancy")),
      new Preset("ovn-kubernetes (upstream), networks granted per namespace", Map.of("ovnKubernetes.enabled", true,
          "policy.enabled", true, "policy.asHook", false), List.of("ovn-kubernetes", "tenancy")));

  @Test
  void helmLintStrictPasses() {
    LintResult lint = HelmChart.lint();
    System.out.println("helm lint --strict charts/egress-service-agent: " + (lint.isFailed() ? "FAILED" : "passed")
        + "\n  " + String.join("\n  ", lint.getMessages()));
    assertThat(lint.isFailed()).as("helm lint: %s", lint.getMessages()).isFalse();
    assertThat(lint.getMessages()).noneMatch(m -> m.contains("[ERROR]") || m.contains("[WARNING]"));
  }

  @Test
  void everyPresetRendersWhatKustomizeRendersFromDeploy() throws Exception {
    Kustomize.unavailable().ifPresent(reason -> Assumptions.assumeTrue(false, reason));
    for (Preset preset : PRESETS) {
      List<JsonNode> chart = HelmChart.render(preset.values());
      List<JsonNode> kustomize = Kustomize.render(preset.components().toArray(String[]::new)).stream()
          .filter(o -> !"Namespace".equals(o.path("kind").asText())).collect(Collectors.toList());
      System.out.printf("helm template, preset %s: %d objects %s; kustomize deploy/ + %s: %d (+ the Namespace)%n",
          preset.name(), chart.size(), kinds(chart), preset.components(), kustomize.size());
      assertSameObjects(preset.name(), chart, kustomize);
    }
  }

  @Test
  void namespaceCreateRendersDeploysPrivilegedNamespace() throws Exception {
    Kustomize.unavailable().ifPresent(reason -> Assumptions.assumeTrue(false, reason));
    assertSameObjects("namespace.create=true", HelmChart.render(Map.of("namespace.create", true)), Kustomize.render());
  }

  @Test
  void everyPresetPassesTheRbacProbeAndSecurityContextChecksOfDeploy() throws Exception {
    List<Preset> all = new ArrayList<>(PRESETS);
    all.add(new Preset("mark mode, kube-rbac-proxy", Map.of("agent.ruleMode", "mark", "monitoring.enabled", true,
        "monitoring.kubeRbacProxy.enabled", true, "monitoring.kubeRbacProxy.scraperTokenSecret", "prometheus-token"),
        List.of()));
    all.add(new Preset("openshift 4.14+, kube-rbac-proxy", Map.of("ovnKubernetes.enabled", true,
        "ovnKubernetes.masqueradePreset", "openshift", "openshift.enabled", true, "monitoring.enabled", true,
        "monitoring.kubeRbacProxy.enabled", true, "monitoring.kubeRbacProxy.scraperTokenSecret", "t"), List.of()));
    for (Preset preset : all) {
      ManifestChecks.installation("chart preset " + preset.name(), HelmChart.render(preset.values()));
    }
    if (Kustomize.unavailable().isEmpty()) {
      for (Preset preset : PRESETS) {
        ManifestChecks.installation("deploy/ + " + preset.components(),
            Kustomize.render(preset.components().toArray(String[]::new)));
      }
    }
  }

  /**
   * The agents' metrics port is where the allocator probes every host for failover: one value moves both, in the
   * chart ({@code agent.metrics.port}) and in kustomize (install.md's ConfigMap and components/metrics-port), and
   * the two renderings are the same installation.
   */
  @Test
  void theMetricsPortIsOneValueThatTheAllocatorsProbesFollow() throws Exception {
    Map<String, Object> values = Map.of("agent.metrics.port", 9500, "monitoring.enabled", true);
    List<JsonNode> chart = HelmChart.render(values);
    JsonNode agent = ManifestChecks.containers(ManifestChecks.daemonSet(chart)).get(0);
    assertThat(agent.path("ports").path(0).path("containerPort").asInt()).isEqualTo(9500);
    assertThat(env(ManifestChecks.daemonSet(chart))).containsEntry("EGRESS_AGENT_METRICS_PORT", "9500");
    JsonNode allocator = Kustomize.one(chart, "Deployment");
    assertThat(env(allocator)).as("the allocator probes the agents' port")
        .containsEntry("EGRESS_AGENT_HOST_PROBE_PORT", "9500");
    assertThat(ManifestChecks.containers(allocator).get(0).path("ports").path(0).path("containerPort").asInt())
        .as("the allocator's own port, on its pod's IP").isEqualTo(9464);
    assertThat(env(Kustomize.one(HelmChart.render(Map.of()), "Deployment")))
        .containsEntry("EGRESS_AGENT_HOST_PROBE_PORT", "9464");

    Kustomize.unavailable().ifPresent(reason -> Assumptions.assumeTrue(false, reason));
    String install = java.nio.file.Files.readString(HelmChart.ROOT.resolve("docs/install.md"));
    String section = install.substring(install.indexOf("### Another metrics port"));
    List<JsonNode> kustomize = Kustomize.renderOwn("install-md-metrics-port",
        yamlBlock(section, "# my-cluster/kustomization.yaml").replace("../egress-service-agent/", "<path>/"),
        Map.of("metrics-port.yaml", yamlBlock(section, "# my-cluster/metrics-port.yaml")));
    assertSameObjects("agent.metrics.port=9500 and install.md's kustomization", chart,
        kustomize.stream().filter(o -> !"Namespace".equals(o.path("kind").asText())).toList());
  }

  /** The first {@code ```yaml} block of {@code markdown} whose first line is {@code firstLine}. */
  private static String yamlBlock(String markdown, String firstLine) {
    java.util.regex.Matcher block = java.util.regex.Pattern
        .compile("```yaml\n(" + java.util.regex.Pattern.quote(firstLine) + "\n.*?)```", java.util.regex.Pattern.DOTALL)
        .matcher(markdown);
    assertThat(block.find()).as("a yaml block starting with %s", firstLine).isTrue();
    return block.group(1);
  }

  @Test
  void monitorAndRuleLabelsAreSettableForThePrometheusSelectors() {
    List<JsonNode> objects = HelmChart.render(Map.of("monitoring.enabled", true,
        "monitoring.labels.release", "kube-prometheus-stack", "monitoring.prometheusRule.labels.role", "alert-rules"));
    JsonNode monitor = Kustomize.one(objects, "PodMonitor").path("metadata").path("labels");
    JsonNode rule = Kustomize.one(objects, "PrometheusRule").path("metadata").path("labels");
    assertThat(monitor.path("release").asText()).isEqualTo("kube-prometheus-stack");
    assertThat(rule.path("release").asText()).isEqualTo("kube-prometheus-stack");
    assertThat(rule.path("role").asText()).isEqualTo("alert-rules");
    assertThat(monitor.has("role")).isFalse();
  }

  @Test
  void kubeRbacProxyScrapesOverTlsWithAToken() {
    List<JsonNode> objects = HelmChart.render(Map.of("monitoring.enabled", true, "monitoring.kubeRbacProxy.enabled", true,
        "monitoring.kubeRbacProxy.scraperTokenSecret", "prometheus-token"));
    JsonNode endpoint = Kustomize.one(objects, "PodMonitor").path("spec").path("podMetricsEndpoints").path(0);
    assertThat(endpoint.path("port").asText()).isEqualTo("https-metrics");
    assertThat(endpoint.path("scheme").asText()).isEqualTo("https");
    assertThat(endpoint.path("authorization").path("credentials").path("name").asText()).isEqualTo("prometheus-token");
    JsonNode proxy = ManifestChecks.containers(ManifestChecks.daemonSet(objects)).get(1);
    assertThat(proxy.path("args").toString()).contains("--allow-paths=/metrics", "--upstream=http://$(HOST_IP):9464/");
    assertThatThrownBy(() -> HelmChart.render(Map.of("monitoring.enabled", true, "monitoring.kubeRbacProxy.enabled", true)))
        .as("a proxy without a token to scrape it with is refused, with what to set")
        .hasMessageContaining("monitoring.kubeRbacProxy.scraperTokenSecret");
  }

  /**
   * The probe key is random per install (not one key shipped to every cluster), long, kept on uninstall, and mounted
   * read-only into the agents and the allocator, which require proofs on an install.
   */
  @Test
  void theProbeKeyIsRandomPerInstallKeptAndMounted() {
    List<String> keys = new ArrayList<>();
    for (int i = 0; i < 2; i++) {
      List<JsonNode> objects = HelmChart.render(Map.of());
      JsonNode secret = objects.stream().filter(ChartTest::chartsOwnSecret).findFirst().orElseThrow();
      assertThat(secret.path("metadata").path("annotations").path("helm.sh/resource-policy").asText())
          .isEqualTo("keep");
      String key = new String(java.util.Base64.getDecoder().decode(secret.path("data").path("key").asText()),
          java.nio.charset.StandardCharsets.UTF_8);
      assertThat(key).hasSize(64).matches("[A-Za-z0-9]+");
      keys.add(key);
      for (String kind : List.of("DaemonSet", "Deployment")) {
        JsonNode pod = objects.stream().filter(o -> o.path("kind").asText().equals(kind)).findFirst().orElseThrow()
            .path("spec").path("template").path("spec");
        assertThat(pod.path("volumes").toString()).as(kind).contains("\"secretName\":\"" + PROBE_KEY + "\"");
        JsonNode container = pod.path("containers").get(0);
        assertThat(container.path("volumeMounts").toString()).as(kind)
            .contains("\"mountPath\":\"/etc/egress-service-agent/probe-key\",\"readOnly\":true");
        assertThat(container.path("env").toString()).as(kind)
            .contains("/etc/egress-service-agent/probe-key/key").doesNotContain("EGRESS_AGENT_HOST_PROBE_PROOFS");
      }
    }
    assertThat(keys.get(0)).as("two installs' keys").isNotEqualTo(keys.get(1));
    assertThat(HelmChart.renderText(Map.of("probeKey.proofs", "learn"))).contains("EGRESS_AGENT_HOST_PROBE_PROOFS");
    assertThatThrownBy(() -> HelmChart.render(Map.of("probeKey.proofs", "maybe"))).hasMessageContaining("proofs");
  }

  @Test
  void valuesOutsideTheSchemaAreRefusedWithTheirName() {
    assertThatThrownBy(() -> HelmChart.render(Map.of("agent.ruleMode", "marks")))
        .hasMessageContaining("ruleMode");
    assertThatThrownBy(() -> HelmChart.render(Map.of("image.tag", "latest"))).hasMessageContaining("tag");
    assertThatThrownBy(() -> HelmChart.render(Map.of("agent.serviceCIDRs[0]", "10.96.0.0")))
        .hasMessageContaining("serviceCIDRs");
    assertThatThrownBy(() -> HelmChart.render(Map.of("agent.javaToolOptions", "-Xmx1g")))
        .as("the JVM must exit when out of memory").hasMessageContaining("javaToolOptions");
    assertThat(HelmChart.render(Map.of("agent.serviceCIDRs[0]", "10.96.0.0/12", "agent.serviceCIDRs[1]", "fd00:10:96::/112")))
        .anySatisfy(o -> assertThat(o.toString()).contains("10.96.0.0/12,fd00:10:96::/112"));
  }

  @Test
  void theImageIsTheChartsAppVersionOrAPinnedDigest() {
    String appVersion = VersionAgreementTest.chartYaml().path("appVersion").asText();
    for (JsonNode c : ManifestChecks.containers(ManifestChecks.daemonSet(HelmChart.render(Map.of())))) {
      assertThat(c.path("image").asText()).isEqualTo("ghcr.io/egress-service-agent/egress-service-agent:" + appVersion);
    }
    String digest = "sha256:" + "ab".repeat(32);
    assertThat(ManifestChecks.containers(ManifestChecks.daemonSet(HelmChart.render(Map.of("image.digest", digest))))
        .get(0).path("image").asText()).isEqualTo("ghcr.io/egress-service-agent/egress-service-agent@" + digest);
  }

  @Test
  void policyEnabledRendersItsCrdTheGrantsTheAdmissionPolicyTheEnvAndTheReads() {
    List<JsonNode> objects = HelmChart.render(Map.of("policy.enabled", true, "policy.asHook", false,
        "policy.grants[0].namespaceSelector.matchLabels.kubernetes\\.io/metadata\\.name", "shop",
        "policy.grants[0].networks[0]", "blue"));
    assertThat(ManifestChecks.ofKind(objects, "CustomResourceDefinition"))
        .extracting(o -> o.path("metadata").path("name").asText())
        .contains("egressservicepolicies.egressservice.io");
    JsonNode grants = Kustomize.one(objects, "EgressServicePolicy");
    assertThat(grants.path("metadata").path("name").asText()).isEqualTo("cluster");
    assertThat(grants.path("spec").path("grants").toString())
        .isEqualTo("[{\"namespaceSelector\":{\"matchLabels\":{\"kubernetes.io/metadata.name\":\"shop\"}},"
            + "\"networks\":[\"blue\"]}]");
    assertThat(names(objects, "ValidatingAdmissionPolicy")).contains("egress-service-grants");
    JsonNode binding = named(objects, "ValidatingAdmissionPolicyBinding", "egress-service-grants");
    assertThat(binding.path("spec").path("paramRef").path("name").asText()).isEqualTo("cluster");
    assertThat(binding.path("spec").path("paramRef").path("parameterNotFoundAction").asText()).isEqualTo("Deny");
    assertThat(env(ManifestChecks.daemonSet(objects))).containsEntry("EGRESS_AGENT_EGRESS_SERVICE_POLICY", "enforce");
    assertThat(env(Kustomize.one(objects, "Deployment"))).containsEntry("EGRESS_AGENT_EGRESS_SERVICE_POLICY", "enforce");
    assertThat(ManifestChecks.grantsOf(objects, ManifestChecks.AGENT_ACCOUNT))
        .containsAllEntriesOf(ManifestChecks.POLICY_GRANTS);
    assertThat(ManifestChecks.grantsOf(objects, ManifestChecks.ALLOCATOR_ACCOUNT))
        .containsAllEntriesOf(ManifestChecks.POLICY_GRANTS);
  }

  @Test
  void policyDisabledRendersNothingOfIt() {
    List<JsonNode> objects = HelmChart.render(Map.of());
    assertThat(ManifestChecks.ofKind(objects, "EgressServicePolicy")).isEmpty();
    assertThat(ManifestChecks.ofKind(objects, "CustomResourceDefinition"))
        .extracting(o -> o.path("metadata").path("name").asText()).containsExactly("egressservices.k8s.ovn.org");
    assertThat(names(objects, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"))
        .noneMatch(n -> n.contains("grants"));
    assertThat(env(ManifestChecks.daemonSet(objects))).doesNotContainKey("EGRESS_AGENT_EGRESS_SERVICE_POLICY");
    assertThat(env(Kustomize.one(objects, "Deployment"))).doesNotContainKey("EGRESS_AGENT_EGRESS_SERVICE_POLICY");
    assertThat(ManifestChecks.grantsOf(objects, ManifestChecks.AGENT_ACCOUNT))
        .doesNotContainKeys("egressservice.io/egressservicepolicies", "/namespaces");
  }

  @Test
  void policyOnOvnKubernetesStillInstallsItsOwnCrdButCrdsInstallFalseDoesNot() {
    List<JsonNode> ovn = HelmChart.render(Map.of("ovnKubernetes.enabled", true, "policy.enabled", true));
    assertThat(ManifestChecks.ofKind(ovn, "CustomResourceDefinition"))
        .extracting(o -> o.path("metadata").path("name").asText())
        .as("OVN-Kubernetes owns the EgressService CRD, not the policy's")
        .containsExactly("egressservicepolicies.egressservice.io");
    assertThat(names(ovn, "ValidatingAdmissionPolicy")).containsExactly("egress-service-grants");
    List<JsonNode> noCrds =
        HelmChart.render(Map.of("crds.install", false, "policy.enabled", true, "policy.asHook", false));
    assertThat(ManifestChecks.ofKind(noCrds, "CustomResourceDefinition")).isEmpty();
    assertThat(ManifestChecks.ofKind(noCrds, "EgressServicePolicy")).hasSize(1);
  }

  @Test
  void theAllocatorsAdmissionPoliciesAreOnByDefaultAndCanBeTurnedOff() {
    List<String> allocatorPolicies = List.of("egress-service-allocator-egressservices", "egress-service-allocator-nodes");
    List<JsonNode> objects = HelmChart.render(Map.of());
    assertThat(names(objects, "ValidatingAdmissionPolicy")).containsExactlyInAnyOrderElementsOf(allocatorPolicies);
    assertThat(names(objects, "ValidatingAdmissionPolicyBinding")).containsExactlyInAnyOrderElementsOf(allocatorPolicies);
    assertThat(ManifestChecks.ofKind(objects, "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"))
        .as("Helm's own API list (no cluster) serves the GA API").allSatisfy(o ->
            assertThat(o.path("apiVersion").asText()).isEqualTo("admissionregistration.k8s.io/v1"));
    assertThat(names(HelmChart.render(Map.of("allocator.admissionPolicies.enabled", false)),
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")).isEmpty();
    assertThat(names(HelmChart.render(Map.of("ovnKubernetes.enabled", true)),
        "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding")).as("no allocator of ours").isEmpty();
  }

  private static List<String> names(List<JsonNode> objects, String... kinds) {
    return ManifestChecks.ofKind(objects, kinds).stream().map(o -> o.path("metadata").path("name").asText())
        .collect(Collectors.toList());
  }

  private static JsonNode named(List<JsonNode> objects, String kind, String name) {
    return ManifestChecks.ofKind(objects, kind).stream()
        .filter(o -> name.equals(o.path("metadata").path("name").asText())).findFirst().orElseThrow();
  }

  private static Map<String, String> env(JsonNode workload) {
    Map<String, String> env = new TreeMap<>();
    ManifestChecks.containers(workload).get(0).path("env").forEach(e -> env.put(e.path("name").asText(),
        e.path("value").asText()));
    return env;
  }

  // ---- comparison ----

  /**
   * The probe key's Secret: the chart makes it at random, kustomize cannot (deploy/ documents the command that
   * creates it before the first apply), so only the chart renders it.
   */
  static final String PROBE_KEY = "egress-service-agent-probe-key";

  private static boolean chartsOwnSecret(JsonNode o) {
    return o.path("kind").asText().equals("Secret") && o.path("metadata").path("name").asText().equals(PROBE_KEY);
  }

  private static void assertSameObjects(String what, List<JsonNode> chart, List<JsonNode> kustomize) throws Exception {
    assertThat(chart).as("%s: the chart makes the probe key", what).filteredOn(ChartTest::chartsOwnSecret).hasSize(1);
    chart = chart.stream().filter(o -> !chartsOwnSecret(o)).toList();
    Map<String, JsonNode> fromChart = byId(chart, ChartTest::withoutHelmsOwn);
    Map<String, JsonNode> fromKustomize = byId(kustomize, ChartTest::normalized);
    assertThat(fromChart.keySet()).as("%s: the chart's objects and kustomize's", what)
        .containsExactlyInAnyOrderElementsOf(fromKustomize.keySet());
    for (Map.Entry<String, JsonNode> e : fromKustomize.entrySet()) {
      List<String> differences = new ArrayList<>();
      diff("", fromChart.get(e.getKey()), e.getValue(), differences);
      assertThat(differences).as("%s: %s, where the chart (first) and kustomize's deploy/ (second) differ", what,
          e.getKey()).isEmpty();
    }
  }

  private static Map<String, JsonNode> byId(List<JsonNode> objects, Function<JsonNode, JsonNode> normalize) {
    Map<String, JsonNode> out = new TreeMap<>();
    for (JsonNode o : objects) {
      assertThat(out.put(Kustomize.id(o), normalize.apply(o))).as("one %s", Kustomize.id(o)).isNull();
    }
    return out;
  }

  private static JsonNode withoutHelmsOwn(JsonNode o) {
    ObjectNode copy = o.deepCopy();
    ObjectNode metadata = (ObjectNode) copy.path("metadata");
    if (metadata.path("labels") instanceof ObjectNode labels) {
      HELM_LABELS.forEach(labels::remove);
      if (labels.isEmpty()) {
        metadata.remove("labels");
      }
    }
    if (metadata.path("annotations") instanceof ObjectNode annotations) {
      annotations.remove("helm.sh/resource-policy");
      if (annotations.isEmpty()) {
        metadata.remove("annotations");
      }
    }
    return normalized(copy);
  }

  /** Sorted keys, and env lists by name: strategic-merge patches append where the chart writes in place. */
  private static JsonNode normalized(JsonNode o) {
    JsonNode copy = o.deepCopy();
    sortEnv(copy);
    return copy;
  }

  /** Each path where the two differ, with both values (missing where one has nothing). */
  private static void diff(String path, JsonNode a, JsonNode b, List<String> out) {
    if (a != null && b != null && a.isObject() && b.isObject()) {
      java.util.Set<String> keys = new java.util.TreeSet<>();
      a.fieldNames().forEachRemaining(keys::add);
      b.fieldNames().forEachRemaining(keys::add);
      keys.forEach(k -> diff(path + "/" + k, a.get(k), b.get(k), out));
    } else if (a != null && b != null && a.isArray() && b.isArray() && a.size() == b.size()) {
      for (int i = 0; i < a.size(); i++) {
        diff(path + "/" + i, a.get(i), b.get(i), out);
      }
    } else if (a == null || b == null || !a.equals(b)) {
      out.add(path + ": " + (a == null ? "(missing)" : a) + " vs " + (b == null ? "(missing)" : b));
    }
  }

  private static void sortEnv(JsonNode node) {
    if (node instanceof ObjectNode obj) {
      if (obj.get("env") instanceof ArrayNode env) {
        List<JsonNode> items = new ArrayList<>();
        env.forEach(items::add);
        items.sort(Comparator.comparing(e -> e.path("name").asText()));
        env.removeAll();
        env.addAll(items);
      }
      obj.forEach(ChartTest::sortEnv);
    } else if (node instanceof ArrayNode arr) {
      arr.forEach(ChartTest::sortEnv);
    }
  }

  private static Map<String, Long> kinds(List<JsonNode> objects) {
    return objects.stream().collect(Collectors.groupingBy(o -> o.path("kind").asText(), LinkedHashMap::new,
        Collectors.counting())).entrySet().stream().sorted(Map.Entry.comparingByKey())
        .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue, (a, b) -> a, LinkedHashMap::new));
  }
}

package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Every way deploy/ is meant to be installed renders with {@code kubectl kustomize} (skipped, with the reason,
 * where kubectl is missing): the base, each component, and all of them together. The summary of each rendering is
 * printed (target/surefire-reports/...-output.txt).
 */
class KustomizeRenderTest {
  private static final String IMAGE = "ghcr.io/egress-service-agent/egress-service-agent:" + VersionAgreementTest.pomVersion();

  @BeforeAll
  static void kubectl() {
    Kustomize.unavailable().ifPresent(reason -> Assumptions.assumeTrue(false, reason));
  }

  private static List<JsonNode> render(String... components) throws Exception {
    List<JsonNode> objects = Kustomize.render(components);
    System.out.println("kubectl kustomize deploy/" + (components.length == 0 ? "" : " + components " + String.join(", ", components))
        + ": " + objects.size() + " objects\n  " + String.join("\n  ", Kustomize.summary(objects)));
    for (JsonNode o : objects) {
      for (JsonNode c : containers(o)) {
        assertThat(c.path("image").asText()).as("image of %s", Kustomize.id(o)).isEqualTo(IMAGE);
      }
    }
    return objects;
  }

  private static List<JsonNode> containers(JsonNode workload) {
    List<JsonNode> out = new ArrayList<>();
    workload.path("spec").path("template").path("spec").path("containers").forEach(out::add);
    return out;
  }

  private static List<String> args(List<JsonNode> objects, String kind) {
    List<String> out = new ArrayList<>();
    containers(Kustomize.one(objects, kind)).get(0).path("args").forEach(a -> out.add(a.asText()));
    return out;
  }

  @Test
  void baseInstallsTheCrdTheNodeAgentAndTheAllocator() throws Exception {
    List<JsonNode> objects = render();
    assertThat(Kustomize.summary(objects)).contains(
        "CustomResourceDefinition/egressservices.k8s.ovn.org",
        "DaemonSet/egress-service-agent/egress-service-agent",
        "Deployment/egress-service-agent/egress-service-allocator",
        "ServiceAccount/egress-service-agent/egress-service-agent",
        "ServiceAccount/egress-service-agent/egress-service-allocator");
    assertThat(args(objects, "DaemonSet")).containsExactly("run", "--allocator=false");
    assertThat(args(objects, "Deployment")).containsExactly("allocator");
  }

  @Test
  void ovnKubernetesDropsOnlyTheCrdAndKeepsTheAllocatorAndSteering() throws Exception {
    List<JsonNode> objects = render("ovn-kubernetes");
    assertThat(Kustomize.summary(objects))
        .as("OVN-Kubernetes' installation ships the CRD; with its EgressService feature off nobody else allocates")
        .noneMatch(id -> id.startsWith("CustomResourceDefinition/"))
        .contains("DaemonSet/egress-service-agent/egress-service-agent", "ClusterRole/egress-service-agent",
            "ServiceAccount/egress-service-agent/egress-service-agent",
            "Deployment/egress-service-agent/egress-service-allocator",
            "ServiceAccount/egress-service-agent/egress-service-allocator");
    JsonNode agent = containers(Kustomize.one(objects, "DaemonSet")).get(0);
    Map<String, String> env = new TreeMap<>();
    agent.path("env").forEach(e -> env.put(e.path("name").asText(), e.path("value").asText()));
    assertThat(env.get("EGRESS_AGENT_EXCLUDE_CIDR")).as("upstream OVN-Kubernetes' masquerade subnets")
        .isEqualTo("169.254.169.0/29,fd69::/125");
    assertThat(env).as("remote endpoints steered").doesNotContainKey("EGRESS_AGENT_REMOTE_ENDPOINTS");
    assertThat(args(objects, "DaemonSet")).contains("--allocator=false");
  }

  @Test
  void monitoringScrapesBothWorkloadsAndShipsRulesAndTheDashboard() throws Exception {
    List<JsonNode> objects = render("monitoring");
    JsonNode podMonitor = Kustomize.one(objects, "PodMonitor");
    JsonNode service = Kustomize.one(objects, "Service");
    Kustomize.one(objects, "PrometheusRule");
    JsonNode dashboard = Kustomize.one(objects, "ConfigMap");
    assertThat(dashboard.path("metadata").path("labels").path("grafana_dashboard").asText()).isEqualTo("1");
    assertThat(dashboard.path("data").path("egress-service-agent.json").asText()).contains("\"panels\"");
    for (String kind : List.of("DaemonSet", "Deployment")) {
      JsonNode labels = Kustomize.one(objects, kind).path("spec").path("template").path("metadata").path("labels");
      podMonitor.path("spec").path("selector").path("matchLabels").fields().forEachRemaining(e ->
          assertThat(labels.path(e.getKey()).asText()).as("PodMonitor selects the %s's pods", kind)
              .isEqualTo(e.getValue().asText()));
      service.path("spec").path("selector").fields().forEachRemaining(e ->
          assertThat(labels.path(e.getKey()).asText()).as("the metrics Service selects the %s's pods", kind)
              .isEqualTo(e.getValue().asText()));
      assertThat(containers(Kustomize.one(objects, kind)).get(0).path("ports").findValuesAsText("name"))
          .contains(podMonitor.path("spec").path("podMetricsEndpoints").path(0).path("port").asText());
    }
  }

  @Test
  void theLabelPatchOfOperateMdLabelsTheMonitorAndTheRuleOnly() throws Exception {
    String operate = java.nio.file.Files.readString(java.nio.file.Path.of("docs/operate.md"));
    java.util.regex.Matcher block = java.util.regex.Pattern
        .compile("(?s)### Labels for your Prometheus' selectors.*?```yaml\n(.*?)```").matcher(operate);
    assertThat(block.find()).as("the kustomization of docs/operate.md, \"Labels for your Prometheus' selectors\"")
        .isTrue();
    List<JsonNode> objects = Kustomize.renderOwn("operate-md-labels", block.group(1));
    for (JsonNode o : objects) {
      String kind = o.path("kind").asText();
      String release = o.path("metadata").path("labels").path("release").asText();
      if (kind.equals("PodMonitor") || kind.equals("PrometheusRule")) {
        assertThat(release).as("the label kube-prometheus-stack selects on %s", Kustomize.id(o))
            .isEqualTo("kube-prometheus-stack");
      } else {
        assertThat(release).as("no label on %s", Kustomize.id(o)).isEmpty();
      }
    }
    assertThat(objects).extracting(o -> o.path("kind").asText()).contains("PodMonitor", "PrometheusRule");
  }

  @Test
  void openshiftAdmitsTheNodeAgentOnlyWithNetAdmin() throws Exception {
    List<JsonNode> objects = render("openshift");
    JsonNode scc = Kustomize.one(objects, "SecurityContextConstraints");
    assertThat(scc.path("allowPrivilegedContainer").asBoolean()).isFalse();
    assertThat(scc.path("allowHostNetwork").asBoolean()).isTrue();
    List<String> caps = new ArrayList<>();
    scc.path("allowedCapabilities").forEach(c -> caps.add(c.asText()));
    assertThat(caps).containsExactly("NET_ADMIN");
    JsonNode binding = Kustomize.ofKind(objects, "RoleBinding").stream()
        .filter(b -> b.path("metadata").path("name").asText().equals("egress-service-agent-scc")).findFirst().orElseThrow();
    assertThat(binding.path("subjects").findValuesAsText("name")).containsExactly("egress-service-agent");
    JsonNode pod = Kustomize.one(objects, "DaemonSet").path("spec").path("template").path("spec");
    assertThat(pod.path("serviceAccountName").asText()).isEqualTo("egress-service-agent");
  }

  /** openshift is for OpenShift with another CNI, never with ovn-kubernetes: each with everything else. */
  @Test
  void theComponentsThatGoTogether() throws Exception {
    Map<String, Long> openshift = kinds(render("openshift", "monitoring", "tenancy"));
    assertThat(openshift).containsEntry("DaemonSet", 1L).containsEntry("Deployment", 1L)
        .containsEntry("SecurityContextConstraints", 1L).containsEntry("PrometheusRule", 1L)
        .containsEntry("CustomResourceDefinition", 2L);
    Map<String, Long> ovn = kinds(render("ovn-kubernetes", "monitoring", "tenancy"));
    assertThat(ovn).containsEntry("DaemonSet", 1L).containsEntry("Deployment", 1L)
        .containsEntry("PrometheusRule", 1L).containsEntry("CustomResourceDefinition", 1L)
        .doesNotContainKey("SecurityContextConstraints");
  }

  private static Map<String, Long> kinds(List<JsonNode> objects) {
    return objects.stream()
        .collect(Collectors.groupingBy(o -> o.path("kind").asText(), TreeMap::new, Collectors.counting()));
  }
}

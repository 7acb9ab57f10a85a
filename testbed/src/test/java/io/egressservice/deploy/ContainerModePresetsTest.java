package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.egressservice.testbed.container.ContainerCluster;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * Every preset's pods, as the chart ({@link ChartTest#PRESETS}) and kustomize render them, are ones the container
 * mode's control plane and kubelet can start exactly as written (every fieldRef filled, every Secret volume's Secret
 * present, every probe on a named port): the container-mode cluster test runs the default preset, this keeps the
 * others within its reach. deploy/'s probe key Secret is made by the install command (deploy/README.md), so it counts
 * as installed there.
 */
class ContainerModePresetsTest {
  private static final Set<String> INSTALL_COMMAND_SECRETS = Set.of("egress-service-agent-probe-key");

  @Test
  void everyPresetsPodsCanBeStartedByTheContainerModesKubelet() throws Exception {
    for (ChartTest.Preset preset : ChartTest.PRESETS) {
      List<JsonNode> chart = HelmChart.render(preset.values());
      assertThat(ContainerCluster.unrunnable(chart, Set.of())).as("chart preset %s", preset.name()).isEmpty();
      assertThat(chart).as("chart preset %s: workloads", preset.name())
          .anyMatch(o -> o.path("kind").asText().equals("DaemonSet"));
      if (Kustomize.unavailable().isEmpty()) {
        List<JsonNode> deploy = Kustomize.render(preset.components().toArray(String[]::new));
        assertThat(ContainerCluster.unrunnable(deploy, INSTALL_COMMAND_SECRETS)).as("deploy/ + %s", preset.components())
            .isEmpty();
      }
    }
  }

  @Test
  void aFieldRefTheKubeletDoesNotFillIsNamed() {
    List<JsonNode> chart = HelmChart.render(java.util.Map.of());
    JsonNode ds = chart.stream().filter(o -> o.path("kind").asText().equals("DaemonSet")).findFirst().orElseThrow();
    ((com.fasterxml.jackson.databind.node.ArrayNode) ds.path("spec").path("template").path("spec").path("containers")
        .get(0).path("env")).addObject().put("name", "X").putObject("valueFrom").putObject("fieldRef")
        .put("fieldPath", "metadata.labels['nope']");
    assertThat(ContainerCluster.unrunnable(chart, Set.of()))
        .containsExactly("DaemonSet egress-service-agent: fieldRef metadata.labels['nope'] is not one the testbed's "
            + "kubelet fills");
  }
}

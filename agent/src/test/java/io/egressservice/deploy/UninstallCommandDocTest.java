package io.egressservice.deploy;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.api.model.Container;
import io.fabric8.kubernetes.api.model.EnvVar;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.Volume;
import io.fabric8.kubernetes.api.model.VolumeMount;
import io.fabric8.kubernetes.api.model.apps.DaemonSet;
import io.fabric8.kubernetes.client.utils.KubernetesSerialization;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The one-line {@code cleanup} of docs/install.md ("Uninstall") runs as the DaemonSet runs the agent: its pod (the
 * JSON of {@code --overrides}) has the rendered DaemonSet's container securityContext, pod securityContext, host
 * network, an emptyDir at the DaemonSet's JNA directory, the chart's image, and {@code cleanup} with the
 * DaemonSet's ownership flags (none by default). A change to either that the other does not follow fails here.
 */
class UninstallCommandDocTest {
  private static final Path INSTALL = HelmChart.ROOT.resolve("docs/install.md");
  private static final KubernetesSerialization KUBE = new KubernetesSerialization();
  private static final Pattern COMMAND = Pattern.compile("(?m)^kubectl run egress-service-cleanup .*$");

  @Test
  void theDocumentedCleanupPodRunsAsTheDaemonSetRunsTheAgent() throws Exception {
    String command = documentedCommand();
    Pod pod = KUBE.unmarshal(overrides(command).replace("'$NODE'", "node-b"), Pod.class);
    DaemonSet ds = KUBE.convertValue(ManifestChecks.daemonSet(HelmChart.render(Map.of())), DaemonSet.class);
    PodSpec agentPod = ds.getSpec().getTemplate().getSpec();
    Container agent = agentPod.getContainers().get(0);
    PodSpec spec = pod.getSpec();
    Container cleanup = spec.getContainers().get(0);

    assertThat(spec.getContainers()).hasSize(1);
    assertThat(spec.getNodeName()).as("the node to clean").isEqualTo("node-b");
    assertThat(spec.getHostNetwork()).as("the node's network namespace").isEqualTo(agentPod.getHostNetwork()).isTrue();
    assertThat(spec.getSecurityContext()).as("pod securityContext").isEqualTo(agentPod.getSecurityContext());
    assertThat(cleanup.getSecurityContext()).as("container securityContext (uid 0, NET_ADMIN only, read-only root)")
        .isEqualTo(agent.getSecurityContext());
    assertThat(cleanup.getImage()).as("the image").isEqualTo(agent.getImage());
    assertThat(command).as("kubectl run's --image").contains("--image=" + agent.getImage() + " ");
    assertThat(cleanup.getName()).as("kubectl run attaches to the container named as the pod")
        .isEqualTo(command.split(" ")[2]);
    assertThat(agent.getArgs()).as("the DaemonSet's flags: add its ownership flags to cleanup if it gets any")
        .containsExactly("run", "--allocator=false");
    assertThat(cleanup.getArgs()).containsExactly("cleanup");
    assertThat(spec.getRestartPolicy()).isEqualTo("Never");
    assertThat(spec.getAutomountServiceAccountToken()).as("cleanup needs no API").isFalse();
    assertThat(spec.getTolerations()).as("any node, whatever its taints, as the DaemonSet")
        .isEqualTo(agentPod.getTolerations());

    String jnaDir = jnaTmpdir(agent).orElseThrow(() -> new AssertionError("the DaemonSet sets no -Djna.tmpdir"));
    assertThat(jnaTmpdir(cleanup)).as("JNA's directory").contains(jnaDir);
    assertThat(emptyDirAt(agentPod, agent, jnaDir)).as("the DaemonSet's volume at %s", jnaDir).isPresent();
    assertThat(emptyDirAt(spec, cleanup, jnaDir)).as("the cleanup pod's volume at %s", jnaDir)
        .isEqualTo(emptyDirAt(agentPod, agent, jnaDir));
  }

  private static String documentedCommand() throws Exception {
    Matcher m = COMMAND.matcher(Files.readString(INSTALL));
    assertThat(m.find()).as("docs/install.md has the one-line cleanup (kubectl run egress-service-cleanup ...)")
        .isTrue();
    String line = m.group();
    assertThat(m.find()).as("one such command").isFalse();
    return line;
  }

  /** The JSON between {@code --overrides='} and the line's last quote. */
  private static String overrides(String command) {
    int start = command.indexOf("--overrides='");
    assertThat(start).as("--overrides='...'").isPositive();
    assertThat(command).endsWith("'");
    return command.substring(start + "--overrides='".length(), command.length() - 1);
  }

  private static Optional<String> jnaTmpdir(Container c) {
    return c.getEnv().stream().filter(e -> e.getName().equals("EGRESS_AGENT_JVM_OPTIONS")).map(EnvVar::getValue)
        .flatMap(v -> Arrays.stream(v.split(" "))).filter(o -> o.startsWith("-Djna.tmpdir="))
        .map(o -> o.substring("-Djna.tmpdir=".length())).findFirst();
  }

  /** The emptyDir mounted (writable) at {@code path} in {@code c}. */
  private static Optional<io.fabric8.kubernetes.api.model.EmptyDirVolumeSource> emptyDirAt(PodSpec pod, Container c,
      String path) {
    Optional<VolumeMount> mount = c.getVolumeMounts().stream().filter(v -> v.getMountPath().equals(path))
        .filter(v -> !Boolean.TRUE.equals(v.getReadOnly())).findFirst();
    return mount.flatMap(m -> pod.getVolumes().stream().filter(v -> v.getName().equals(m.getName())).findFirst())
        .map(Volume::getEmptyDir);
  }
}

package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.lifecycle.TestFaults;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import io.fabric8.kubernetes.api.model.NodeBuilder;
import io.fabric8.kubernetes.api.model.apiextensions.v1.CustomResourceDefinition;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import java.io.FileInputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 20: after an OutOfMemoryError in the reconcile thread the process stayed up, never ready and never
 * restarted. The real {@code run} process, started without {@code -XX:+ExitOnOutOfMemoryError} (as by hand), with
 * the test-only fault that makes its reconcile worker throw one ({@link TestFaults}), now exits 3 within seconds.
 */
@EnableKubernetesMockClient(crud = true)
class FailFastProcessTest {
  KubernetesMockServer server;
  KubernetesClient client;
  Netns ns;
  @TempDir Path dir;

  @BeforeEach
  void setUp() throws Exception {
    Privileges.assumeNetAdmin();
    ns = Netns.create("ff");
    try (FileInputStream in = new FileInputStream("crds/egressservices.k8s.ovn.org.yaml")) {
      CustomResourceDefinition crd = client.apiextensions().v1().customResourceDefinitions().load(in).item();
      client.resource(crd).create();
    }
    client.nodes().resource(new NodeBuilder().withNewMetadata().withName("node-a").endMetadata()
        .withNewSpec().withPodCIDRs("10.128.0.0/24").endSpec().build()).create();
  }

  @AfterEach
  void tearDown() {
    if (ns != null) {
      ns.close();
    }
  }

  @Test
  void anOutOfMemoryErrorInTheReconcileThreadEndsTheProcessWithStatusThree() throws Exception {
    Path log = dir.resolve("agent.log");
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    ProcessBuilder pb = new ProcessBuilder(java, "-Xmx128m", "-XX:TieredStopAtLevel=1",
        "-D" + TestFaults.PROPERTY + "=oom-in-thread:reconcile-", "-cp", System.getProperty("java.class.path"),
        Main.class.getName(), "run", "--node-name", "node-a", "--netns", ns.name(), "--netns-metrics-port", "0",
        "--metrics-port", "0", "--metrics-bind-address", "127.0.0.1", "--allocator=false")
        .redirectErrorStream(true).redirectOutput(log.toFile());
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.startsWith("EGRESS_AGENT_") || k.startsWith("KUBERNETES_") || k.equals("KUBECONFIG")
        || k.equals("JAVA_TOOL_OPTIONS") || k.equals("JDK_JAVA_OPTIONS"));
    env.put("KUBERNETES_MASTER", client.getConfiguration().getMasterUrl());
    env.put("KUBERNETES_TRUST_CERTIFICATES", "true");
    env.put("KUBERNETES_AUTH_TRYKUBECONFIG", "false");
    env.put("KUBERNETES_AUTH_TRYSERVICEACCOUNT", "false");
    env.put("EGRESS_AGENT_SERVICE_CIDR", "172.30.0.0/16");
    env.put("EGRESS_AGENT_LOG_LEVEL", "info");
    Process agent = pb.start();
    try {
      boolean exited = agent.waitFor(60, TimeUnit.SECONDS);

      String output = Files.readString(log);
      assertThat(exited).as("exited within 60 s; its log:\n%s", output).isTrue();
      assertThat(agent.exitValue()).as(output).isEqualTo(Main.EXIT_FATAL_ERROR);
      assertThat(output).as("informers synced, the first reconcile ran").contains("informers synced");
      assertThat(output.lines().filter(l -> l.contains("fatal: ")))
          .singleElement().asString()
          .contains("java.lang.OutOfMemoryError", "in thread reconcile-node-a", "exiting with status 3");
    } finally {
      agent.destroyForcibly();
      agent.waitFor(10, TimeUnit.SECONDS);
    }
  }
}

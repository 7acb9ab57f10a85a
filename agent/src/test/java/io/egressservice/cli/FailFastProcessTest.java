package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.EnableKubernetesMockClient;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/**
 * After an OutOfMemoryError in the reconcile thread the process stayed up, never ready and never
 * restarted. The real {@code run} process, started without {@code -XX:+ExitOnOutOfMemoryError} (as by hand), its
 * reconcile worker made to throw one in its first reconcile ({@link OomInFirstReconcileMain}, which wraps Main on
 * the tests' class path), now exits 3 within seconds.
 */
@EnableKubernetesMockClient(crud = true)
class FailFastProcessTest {
  KubernetesClient client;
  @RegisterExtension
  final AgentNode node = new AgentNode("ff");
  @TempDir Path dir;

  @Test
  void anOutOfMemoryErrorInTheReconcileThreadEndsTheProcessWithStatusThree() throws Exception {
    Path log = dir.resolve("agent.log");
    Process agent = node.start(AgentProcess.mainClass(node.run(log, 0), OomInFirstReconcileMain.class));
    boolean exited = agent.waitFor(60, TimeUnit.SECONDS);

    String output = Files.readString(log);
    assertThat(exited).as("exited within 60 s; its log:\n%s", output).isTrue();
    assertThat(agent.exitValue()).as(output).isEqualTo(Main.EXIT_FATAL_ERROR);
    assertThat(output).as("informers synced, the first reconcile ran").contains("informers synced");
    assertThat(output.lines().filter(l -> l.contains("fatal: ")))
        .singleElement().asString()
        .contains("java.lang.OutOfMemoryError", "in thread reconcile-node-a", "exiting with status 3");
  }
}

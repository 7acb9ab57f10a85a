package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.lifecycle.TestFaults;
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
 * restarted. The real {@code run} process, started without {@code -XX:+ExitOnOutOfMemoryError} (as by hand), with
 * the test-only fault that makes its reconcile worker throw one ({@link TestFaults}), now exits 3 within seconds.
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
    Process agent = node.start(node.run(log, 0, "-D" + TestFaults.PROPERTY + "=oom-in-thread:reconcile-"));
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

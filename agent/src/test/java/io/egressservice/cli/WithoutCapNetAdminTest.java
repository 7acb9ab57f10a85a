package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.testing.Unprivileged;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The commands run by a user without CAP_NET_ADMIN, in a real process. */
class WithoutCapNetAdminTest {
  @TempDir Path dir;

  @BeforeEach
  void needsSetpriv() {
    Unprivileged.assumeAvailable();
  }

  @Test
  void withoutRootTheFirstLineIsTheRealErrorNotAJavaUtilLoggingWarning() throws Exception {
    for (String command : new String[] {"status", "cleanup", "apply --objects examples --node node-a"}) {
      Unprivileged.Result r = Unprivileged.run(Map.of(), Duration.ofSeconds(60), dir, Main.class.getName(),
          command.split(" "));

      assertThat(r.exit()).as("%s; stderr: %s", command, r.err()).isEqualTo(Main.EXIT_SYSTEM_ERROR);
      assertThat(r.err().lines().findFirst()).as(command).hasValueSatisfying(first -> assertThat(first)
          .startsWith("error: ").contains("CAP_NET_ADMIN"));
      assertThat(r.err()).as(command).doesNotContain("WARNING", "you must be root", "java.util.logging");
    }
  }

  @Test
  void runWithoutCapNetAdminExitsTwoInsteadOfRetryingForever() throws Exception {
    // An API server that is never reached: the privilege check comes first.
    Path kubeconfig = Files.writeString(dir.resolve("kubeconfig"), """
        apiVersion: v1
        kind: Config
        clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
        users: [{name: u, user: {token: t}}]
        contexts: [{name: x, context: {cluster: c, user: u}}]
        current-context: x
        """);

    Unprivileged.Result r = Unprivileged.run(Map.of(), Duration.ofSeconds(30), dir, Main.class.getName(),
        "run", "--node-name", "node-a", "--kubeconfig", kubeconfig.toString(), "--metrics-port", "0",
        "--allocator=false");

    assertThat(r.exit()).as("exit code (-1: still running after 30 s); stderr: %s", r.err())
        .isEqualTo(Main.EXIT_SYSTEM_ERROR);
    assertThat(r.err().lines().findFirst()).hasValueSatisfying(first -> assertThat(first)
        .startsWith("error: ").contains("CAP_NET_ADMIN"));
  }
}

package io.egressservice.cli;

import io.egressservice.testing.MockApiFields;
import io.egressservice.testing.MockApiObjects;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.extension.AfterEachCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

/**
 * The set-up of the tests that run the real agent process as node-a ({@code @RegisterExtension} beside
 * {@code @EnableKubernetesMockClient}): per test a throwaway namespace for its kernel (skipped without root), our CRD
 * and a bare Node node-a on the test's mock API server, and the processes the test starts, killed after it before
 * the namespace goes.
 */
final class AgentNode implements BeforeEachCallback, AfterEachCallback {
  private final NetnsFixture kernel;
  private final List<Process> started = new ArrayList<>();
  private KubernetesClient client;

  AgentNode(String prefix) {
    this.kernel = new NetnsFixture(prefix);
  }

  @Override
  public void beforeEach(ExtensionContext context) {
    kernel.beforeEach(context);
    client = MockApiFields.injected(context, KubernetesClient.class);
    MockApiObjects.installCrd(client);
    MockApiObjects.bareNodeA(client);
  }

  Netns ns() {
    return kernel.ns();
  }

  /** {@link AgentProcess#run} of node-a in the test's namespace against its mock API server. */
  ProcessBuilder run(Path log, int metricsPort, String... jvmOptions) {
    return AgentProcess.run(client, log, kernel.ns(), metricsPort, jvmOptions);
  }

  /** Starts {@code pb}; the process is killed after the test. */
  Process start(ProcessBuilder pb) throws IOException {
    Process p = pb.start();
    started.add(p);
    return p;
  }

  @Override
  public void afterEach(ExtensionContext context) throws Exception {
    try {
      for (Process p : started) {
        p.destroyForcibly();
        p.waitFor(10, TimeUnit.SECONDS);
      }
    } finally {
      started.clear();
      kernel.afterEach(context);
    }
  }
}

package io.egressservice.cli;

import io.egressservice.testing.Netns;
import io.fabric8.kubernetes.client.KubernetesClient;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** The real agent's process ({@code java -cp <the tests' class path> Main ...}) against the test's mock API server. */
final class AgentProcess {
  private AgentProcess() {}

  /**
   * {@code java -Xmx128m -XX:TieredStopAtLevel=1 <jvmOptions> -cp <class path> Main <args>}, its output (both
   * streams) to {@code log}, its client pointed at the API server of {@code client}.
   */
  static ProcessBuilder builder(KubernetesClient client, Path log, List<String> jvmOptions, List<String> args) {
    List<String> command = new ArrayList<>(List.of(
        Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx128m", "-XX:TieredStopAtLevel=1"));
    command.addAll(jvmOptions);
    command.addAll(List.of("-cp", System.getProperty("java.class.path"), Main.class.getName()));
    command.addAll(args);
    ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
    useApiServer(pb.environment(), client);
    return pb;
  }

  /**
   * {@code run} as node-a in {@code ns} without the allocator, serving /metrics on 127.0.0.1:{@code metricsPort},
   * in an environment cleared of what a developer's shell may set for the agent, its client or the JVM.
   */
  static ProcessBuilder run(KubernetesClient client, Path log, Netns ns, int metricsPort, String... jvmOptions) {
    ProcessBuilder pb = builder(client, log, List.of(jvmOptions), List.of("run", "--node-name", "node-a", "--netns",
        ns.name(), "--netns-metrics-port", "0", "--metrics-port", Integer.toString(metricsPort),
        "--metrics-bind-address", "127.0.0.1", "--allocator=false"));
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.startsWith("EGRESS_AGENT_") || k.startsWith("KUBERNETES_") || k.equals("KUBECONFIG")
        || k.equals("JAVA_TOOL_OPTIONS") || k.equals("JDK_JAVA_OPTIONS"));
    useApiServer(env, client);
    env.put("EGRESS_AGENT_SERVICE_CIDR", "172.30.0.0/16");
    env.put("EGRESS_AGENT_LOG_LEVEL", "info");
    return pb;
  }

  /** {@code pb}, one of the above, with {@code main} started in Main's place: a test's wrapper around Main. */
  static ProcessBuilder mainClass(ProcessBuilder pb, Class<?> main) {
    List<String> command = pb.command();
    command.set(command.indexOf(Main.class.getName()), main.getName());
    return pb;
  }

  private static void useApiServer(Map<String, String> env, KubernetesClient client) {
    env.put("KUBERNETES_MASTER", client.getConfiguration().getMasterUrl());
    env.put("KUBERNETES_TRUST_CERTIFICATES", "true");
    env.put("KUBERNETES_AUTH_TRYKUBECONFIG", "false");
    env.put("KUBERNETES_AUTH_TRYSERVICEACCOUNT", "false");
  }
}

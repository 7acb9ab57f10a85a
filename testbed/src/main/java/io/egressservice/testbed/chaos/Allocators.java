package io.egressservice.testbed.chaos;

import io.egressservice.allocator.AllocatorConfig;
import io.egressservice.testbed.AgentProcess;
import io.egressservice.testbed.Cluster;
import io.fabric8.kubernetes.api.model.coordination.v1.Lease;
import java.io.File;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;

/**
 * The {@code allocator} Deployment's replicas as processes ({@code Main allocator}, one pod name each), reaching the
 * API through the cluster's kubeconfig and probing the agents from the lan namespace, as the agents' own allocator
 * does in the testbed. The agents then run {@code --allocator=false}.
 */
final class Allocators implements AutoCloseable {
  private final Cluster cluster;
  private final Process[] replicas;

  Allocators(Cluster cluster, int count) {
    this.cluster = cluster;
    this.replicas = new Process[count];
    for (int i = 0; i < count; i++) {
      start(i);
    }
  }

  static String name(int i) {
    return "allocator-" + i;
  }

  synchronized void start(int i) {
    if (replicas[i] != null && replicas[i].isAlive()) {
      return;
    }
    List<String> cmd = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
        "-cp", classPath(), "io.egressservice.cli.Main", "allocator", "--kubeconfig",
        cluster.api().kubeconfig().toString(), "--pod-name", name(i), "--lease-namespace", AgentProcess.LEASE_NAMESPACE,
        "--metrics-port", "0", "--host-probe-netns", cluster.netns("lan").name()));
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true)
        .redirectOutput(ProcessBuilder.Redirect.appendTo(cluster.dir().resolve(name(i) + ".log").toFile()));
    Map<String, String> env = pb.environment();
    env.keySet().removeIf(k -> k.startsWith("EGRESS_AGENT_") || k.startsWith("KUBERNETES_") || k.equals("KUBECONFIG")
        || k.equals("JAVA_TOOL_OPTIONS") || k.equals("JDK_JAVA_OPTIONS"));
    env.put("JAVA_TOOL_OPTIONS", AgentProcess.DAEMONSET_JVM_OPTIONS);
    env.put("MALLOC_ARENA_MAX", "2");
    try {
      replicas[i] = pb.start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot start " + name(i) + ": " + e.getMessage(), e);
    }
  }

  synchronized boolean running(int i) {
    return replicas[i] != null && replicas[i].isAlive();
  }

  int count() {
    return replicas.length;
  }

  /** The replica holding the Lease, if one does. */
  Optional<Integer> leader() {
    Lease lease = cluster.api().client().leases().inNamespace(AgentProcess.LEASE_NAMESPACE)
        .withName(AllocatorConfig.DEFAULT_LEASE_NAME).get();
    if (lease == null || lease.getSpec() == null || lease.getSpec().getHolderIdentity() == null) {
      return Optional.empty();
    }
    for (int i = 0; i < replicas.length; i++) {
      if (lease.getSpec().getHolderIdentity().equals(name(i))) {
        return Optional.of(i);
      }
    }
    return Optional.empty();
  }

  /** SIGKILL of replica {@code i}, waiting (at most 10 s) until it is gone. */
  synchronized void kill(int i) {
    Process p = replicas[i];
    if (p == null) {
      return;
    }
    p.destroyForcibly();
    try {
      p.waitFor(10, TimeUnit.SECONDS);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }

  Optional<Long> pid(int i) {
    Process p = replicas[i];
    return p != null && p.isAlive() ? Optional.of(p.pid()) : Optional.empty();
  }

  private static String classPath() {
    List<String> entries = new ArrayList<>();
    for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
      if (!e.isEmpty()) {
        entries.add(Path.of(e).toAbsolutePath().toString());
      }
    }
    return String.join(File.pathSeparator, entries);
  }

  @Override
  public synchronized void close() {
    for (int i = 0; i < replicas.length; i++) {
      kill(i);
    }
  }
}

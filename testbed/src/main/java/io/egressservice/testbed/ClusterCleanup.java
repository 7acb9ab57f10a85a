package io.egressservice.testbed;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

/**
 * What a {@link Cluster} leaves on the machine, and its removal on every exit path: the temporary directory
 * (kubeconfig, agents' logs, the lists below), the namespaces, and a watchdog shell that outlives a JVM killed
 * without its shutdown hooks to kill the agents and delete the namespaces in its place. Kept apart from the
 * cluster because it must not depend on the cluster's own state being intact.
 */
final class ClusterCleanup {
  private final Path dir;
  private Process watchdog;

  private ClusterCleanup(Path dir) {
    this.dir = dir;
  }

  /** Creates the cluster's temporary directory with empty lists of namespaces and agent pids. */
  static ClusterCleanup createDir(String id) {
    try {
      Path dir = Files.createTempDirectory("esa-testbed-" + id + "-");
      Files.writeString(dir.resolve("netns"), "");
      Files.writeString(dir.resolve("pids"), "");
      return new ClusterCleanup(dir);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot create the cluster's temporary directory", e);
    }
  }

  Path dir() {
    return dir;
  }

  /** The list of the cluster's namespaces the watchdog deletes (written as they are created). */
  Path namespaceList() {
    return dir.resolve("netns");
  }

  /**
   * A shell that outlives this JVM only to clean up after it: once this JVM's pid is gone (killed without running
   * its shutdown hooks), it SIGKILLs the agents listed in {@code <dir>/pids} and deletes the namespaces in {@code
   * <dir>/netns}. {@link #finish} ends it.
   */
  void startWatchdog() {
    long self = ProcessHandle.current().pid();
    String script = "while [ -e /proc/" + self + " ]; do sleep 1; done; "
        + "for p in $(cat '" + dir + "/pids'); do kill -9 $p 2>/dev/null; done; "
        + "for n in $(cat '" + dir + "/netns'); do ip netns del $n 2>/dev/null; done; "
        + "rm -rf '" + dir + "'";
    try {
      watchdog = new ProcessBuilder("sh", "-c", script).redirectErrorStream(true)
          .redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
    } catch (IOException e) {
      throw new IllegalStateException("cannot start the cluster's watchdog (sh): " + e.getMessage(), e);
    }
  }

  /** The agents' pids, for the watchdog to kill. */
  synchronized void agentPids(List<Long> pids) {
    StringBuilder sb = new StringBuilder();
    pids.forEach(p -> sb.append(p).append('\n'));
    try {
      Files.writeString(dir.resolve("pids"), sb.toString());
    } catch (IOException e) {
      // the watchdog only misses this agent; close() still kills it
    }
  }

  /** Deletes the namespaces (in the order given) and their kernel state with them. */
  static void deleteNamespaces(List<String> names) {
    for (String name : names) {
      Namespace.run(List.of("ip", "netns", "del", name), null);
    }
  }

  /** Ends the watchdog and deletes the directory unless {@code keepDir} (then the agents' logs stay). */
  void finish(boolean keepDir) {
    if (watchdog != null) {
      watchdog.destroyForcibly();
    }
    if (!keepDir) {
      deleteDir();
    }
  }

  private void deleteDir() {
    try (var files = Files.list(dir)) {
      for (Path p : files.toList()) {
        Files.deleteIfExists(p);
      }
      Files.deleteIfExists(dir);
    } catch (IOException e) {
      // a temporary directory: best effort
    }
  }
}

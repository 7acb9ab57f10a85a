package io.egressservice.testbed;

import java.util.stream.Collectors;

/**
 * Not a test: a JVM that builds a one-node cluster, prints {@code ready <namespace prefix> <agent pid>} and waits
 * to be killed (ClusterTest SIGKILLs it to check that the watchdog cleans up).
 */
public final class ClusterChild {
  private ClusterChild() {}

  public static void main(String[] args) throws InterruptedException {
    Cluster c = Cluster.builder().node("node-a", 1, 1).start();
    System.out.println("ready " + c.namespacePrefix() + " "
        + c.nodes().stream().map(n -> String.valueOf(n.agent().pid().orElseThrow())).collect(Collectors.joining(",")));
    System.out.flush();
    Thread.sleep(120_000); // bounded: the parent kills it long before
    c.close();
  }
}

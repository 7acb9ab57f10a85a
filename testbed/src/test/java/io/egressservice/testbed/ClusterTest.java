package io.egressservice.testbed;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import io.egressservice.testing.Privileges;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

/**
 * The namespace cluster itself, before any EgressService: wired as a CNI would (pod-to-pod keeps the pod's
 * address across nodes, traffic leaving the cluster is masqueraded to the uplink's address), the real agents run
 * and elect one allocator, a node powers off (agent SIGKILLed, links down) and back on, and {@link Cluster#close()}
 * leaves no namespace and no process behind.
 */
class ClusterTest {
  @Test
  void podsReachEachOtherAndTheOutsideAsUnderACniAndCloseRemovesEverything() {
    Privileges.assumeNetAdmin();
    Cluster c = Cluster.standard().start();
    List<Long> pids = List.of();
    try {
      for (IpFamily f : IpFamily.values()) {
        String ext = Addresses.external(f);
        Cluster.Node b = c.node("node-b");
        expect(c, "udp", "pod-b2", ext, new Seen("ext-b1", "udp", b.uplink(1).nodeIp(f)));
        expect(c, "tcp", "pod-b2", ext, new Seen("ext-b1", "tcp", b.uplink(1).nodeIp(f)));
        expect(c, "udp", "pod-a1", ext, new Seen("ext-a1", "udp", c.node("node-a").uplink(1).nodeIp(f)));
        expect(c, "udp", "pod-a1", c.pod("pod-b1").ip(f), new Seen("pod-b1", "udp", c.pod("pod-a1").ip(f)));
        expect(c, "tcp", "pod-c1", c.pod("pod-b2").ip(f), new Seen("pod-b2", "tcp", c.pod("pod-c1").ip(f)));
        assertThat(c.traffic().transfer("pod-b1", ext, 1 << 20, Duration.ofSeconds(10)).complete()).isTrue();
      }
      // a power-off: the agent SIGKILLed and the links down; back on, traffic and the agent return
      Cluster.Node b = c.node("node-b");
      long killed = b.agent().pid().orElseThrow();
      b.powerOff();
      assertThat(b.agent().running()).isFalse();
      assertThat(c.traffic().udp("pod-b2", Addresses.EXTERNAL_V4).seen()).as("pod-b2 while node-b is off").isEmpty();
      assertThat(b.netns().exec("ip", "-o", "link", "show", "eth0")).contains("state DOWN");
      b.powerOn();
      assertThat(b.agent().pid()).isPresent().isNotEqualTo(Optional.of(killed));
      for (IpFamily f : IpFamily.values()) {
        expect(c, "udp", "pod-b2", Addresses.external(f), new Seen("ext-b1", "udp", b.uplink(1).nodeIp(f)));
        expect(c, "tcp", "pod-a1", c.pod("pod-b1").ip(f), new Seen("pod-b1", "tcp", c.pod("pod-a1").ip(f)));
      }
      await().atMost(Duration.ofSeconds(20)).untilAsserted(() -> assertThat(c.api().client().leases()
          .inNamespace(AgentProcess.LEASE_NAMESPACE).list().getItems())
          .singleElement().satisfies(l -> assertThat(l.getSpec().getHolderIdentity()).startsWith("egress-service-agent-node-")));
      pids = c.nodes().stream().map(n -> n.agent().pid().orElseThrow()).toList();
    } finally {
      c.close();
    }
    assertThat(c.anyNamespaceLeft()).isFalse();
    assertThat(pids).allSatisfy(p -> assertThat(ProcessHandle.of(p).map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true)));
  }

  /** SIGKILL of the JVM that built a cluster: no hook runs, the watchdog kills the agent and deletes the namespaces. */
  @Test
  void aJvmKilledWithoutItsShutdownHooksLeavesNoNamespaceAndNoAgentBehind() throws Exception {
    Privileges.assumeNetAdmin();
    String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process child = new ProcessBuilder(javaBin, "-cp", System.getProperty("java.class.path"), ClusterChild.class.getName())
        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
    String prefix;
    List<Long> agents;
    try {
      CompletableFuture<String> line = CompletableFuture.supplyAsync(() -> {
        try {
          return new BufferedReader(new InputStreamReader(child.getInputStream())).readLine();
        } catch (IOException e) {
          return null;
        }
      });
      String ready = line.get(90, TimeUnit.SECONDS);
      assertThat(ready).as("the child's first line").startsWith("ready ");
      prefix = ready.split(" ")[1];
      agents = Arrays.stream(ready.split(" ")[2].split(",")).map(Long::parseLong).toList();
      assertThat(Namespace.runOrThrow(List.of("ip", "netns", "list"))).contains(prefix);
    } finally {
      child.destroyForcibly(); // SIGKILL: no shutdown hook
      child.waitFor(10, TimeUnit.SECONDS);
    }
    await().atMost(Duration.ofSeconds(15)).untilAsserted(() -> {
      assertThat(Namespace.runOrThrow(List.of("ip", "netns", "list"))).doesNotContain(prefix);
      assertThat(agents).allSatisfy(p -> assertThat(ProcessHandle.of(p).map(ProcessHandle::isAlive)).isNotEqualTo(Optional.of(true)));
    });
  }

  static void expect(Cluster c, String protocol, String from, String dst, Seen seen) {
    await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(50)).untilAsserted(() -> {
      Probe p = protocol.equals("udp") ? c.traffic().udp(from, dst) : c.traffic().tcp(from, dst);
      assertThat(p.seen()).as("%s %s -> %s", protocol, from, dst).containsExactly(seen);
      assertThat(p.reply()).contains("saw " + seen.source() + " at " + seen.where());
    });
  }
}

package io.egressservice.explain;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.egressservice.cli.InProcess;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import io.egressservice.testing.Privileges;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;
import org.ovn.k8s.v1.EgressServiceSpec.SourceIPBy;

/**
 * The namespace cluster of the explain tests: node-a (2 uplinks, pod-a1), node-b (1 uplink, pod-b1 to pod-b3), the real
 * agents; EgressService {@code web} (LoadBalancerIP, network 100, host node-a) has pod-a1 and pod-b1. Runs {@code
 * explain} in-process against a node's namespace and the cluster's API, and sends real packets to compare. One
 * cluster per test class ({@code @RegisterExtension static}): started before its tests (skipped without root),
 * closed after them, and then no namespace of it may be left.
 */
final class ExplainCluster implements BeforeAllCallback, AfterAllCallback {
  static final Duration PATIENCE = Duration.ofSeconds(20);
  static final List<String> WEB_LB = List.of(Addresses.lbIp(5, IpFamily.V4), Addresses.lbIp(5, IpFamily.V6));

  private final String ruleMode;
  Cluster cluster;

  /** The agents run with {@code --rule-mode ruleMode}. */
  ExplainCluster(String ruleMode) {
    this.ruleMode = ruleMode;
  }

  @Override
  public void beforeAll(ExtensionContext context) {
    Privileges.assumeNetAdmin();
    cluster = Cluster.builder().node("node-a", 2, 1).node("node-b", 1, 3).agentArgs("--rule-mode", ruleMode).start();
    cluster.api().createLoadBalancer("web", "172.30.0.10", "fd02::10", WEB_LB,
        List.of(cluster.pod("pod-a1"), cluster.pod("pod-b1")));
    cluster.api().applyEgressService("web", SourceIPBy.LOADBALANCERIP, "100", Optional.of("node-a"));
    await().atMost(PATIENCE).until(() -> cluster.api().host("web").equals(Optional.of("node-a")));
  }

  /** explain's result: exit code, text and JSON of the same question. */
  record Answer(String text, JsonNode json) {
    String sentence() {
      return json.path("sentence").asText();
    }
  }

  /** {@code explain POD --to DEST} on the pod's node, in text and in JSON. */
  Answer explain(String pod, String dest, String... more) {
    Cluster.Pod p = cluster.pod(pod);
    String node = p.node();
    List<String> args = new java.util.ArrayList<>(List.of("explain", "shop/" + pod, "--to", dest, "--netns",
        cluster.node(node).netns().name(), "--kubeconfig", cluster.api().kubeconfig().toString(), "--node", node));
    args.addAll(List.of(more));
    InProcess.Result text = InProcess.run(args.toArray(String[]::new));
    assertThat(text.exit()).as("explain %s:%n%s%n%s", pod, text.out(), text.err()).isZero();
    args.addAll(List.of("-o", "json"));
    InProcess.Result json = InProcess.run(args.toArray(String[]::new));
    assertThat(json.exit()).as("explain %s -o json:%n%s", pod, json.err()).isZero();
    try {
      // kept for people to read (closing notes quote them)
      java.nio.file.Path samples = java.nio.file.Path.of("target", "explain-samples");
      java.nio.file.Files.createDirectories(samples);
      java.nio.file.Files.writeString(samples.resolve(pod + "-to-" + dest.replace(':', '_') + ".txt"), text.out());
      java.nio.file.Files.writeString(samples.resolve(pod + "-to-" + dest.replace(':', '_') + ".json"), json.out());
      return new Answer(text.out(), new ObjectMapper().readTree(json.out()));
    } catch (java.io.IOException e) {
      throw new AssertionError("explain -o json printed no JSON: " + json.out(), e);
    }
  }

  /** Where a real UDP packet of {@code pod} to {@code dest} arrived: exactly one external side saw it. */
  Seen leaves(String pod, String dest) {
    Seen[] seen = new Seen[1];
    await().atMost(PATIENCE).pollDelay(Duration.ZERO).pollInterval(Duration.ofMillis(100)).untilAsserted(() -> {
      Probe p = cluster.traffic().udp(pod, dest);
      assertThat(p.seen()).as("udp %s -> %s: who saw it", pod, dest).hasSize(1);
      seen[0] = p.seen().get(0);
    });
    return seen[0];
  }

  /** The uplink of the cluster behind which {@code where} (ext-a2, ...) answers. */
  Cluster.Uplink uplink(Seen seen) {
    return cluster.nodes().stream().flatMap(n -> n.uplinks().stream()).filter(u -> u.where().equals(seen.where()))
        .findFirst().orElseThrow(() -> new AssertionError("no uplink answers as " + seen.where()));
  }

  @Override
  public void afterAll(ExtensionContext context) {
    if (cluster != null) {
      cluster.close();
      assertThat(cluster.anyNamespaceLeft()).isFalse();
    }
  }
}

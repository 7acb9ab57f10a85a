package io.egressservice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.cli.InProcess;
import io.egressservice.ip.IpFamily;
import io.egressservice.testbed.Addresses;
import io.egressservice.testbed.Cluster;
import io.egressservice.testbed.Traffic.Probe;
import io.egressservice.testbed.Traffic.Seen;
import io.egressservice.testing.Privileges;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Scripts use {@code apply} as well as {@code run}: with {@code status.host: node-a} in the objects, {@code apply
 * --node node-b --netns <node-b>} programs node-b's side (steering) and {@code apply --node node-a} the host's, and
 * a pod on node-b leaves through node-a's network 100 with the LB IP, in both families. No agent processes here.
 */
public class ApplyOnClusterTest {
  @TempDir Path tmp;

  @Test
  void applyOnNodeBWithStatusHostNodeAProgramsNodeBsSideAndItsPodLeavesThroughNodeA() throws IOException {
    Privileges.assumeNetAdmin();
    try (Cluster c = Cluster.builder().node("node-a", 2, 1).node("node-b", 1, 1).withoutAgents().start()) {
      Path objects = Files.writeString(tmp.resolve("objects.yaml"), objects());
      for (String node : new String[] {"node-b", "node-a"}) {
        InProcess.Result r = InProcess.run("apply", "--objects", objects.toString(), "--node", node, "--netns",
            c.node(node).netns().name(), "--service-cidr", "172.30.0.0/16,fd02::/112");
        assertThat(r.exit()).as("apply on %s:%n%s%n%s", node, r.out(), r.err()).isZero();
      }
      for (IpFamily f : IpFamily.values()) {
        String lbIp = Addresses.lbIp(5, f);
        await().atMost(Duration.ofSeconds(5)).pollDelay(Duration.ZERO).untilAsserted(() -> {
          Probe p = c.traffic().udp("pod-b1", Addresses.external(f));
          assertThat(p.seen()).as("pod-b1 over %s", f).containsExactly(new Seen("ext-a2", "udp", lbIp));
          assertThat(p.reply()).contains("saw " + lbIp + " at ext-a2");
        });
      }
    }
  }

  /** Both Nodes as the cluster has them, a dual-stack LoadBalancer with pod-a1 and pod-b1, status.host node-a. */
  public static String objects() {
    StringBuilder sb = new StringBuilder();
    for (int i = 1; i <= 2; i++) {
      String name = i == 1 ? "node-a" : "node-b";
      sb.append("apiVersion: v1\nkind: Node\nmetadata: {name: ").append(name).append("}\n")
          .append("spec: {podCIDRs: [").append(Addresses.podCidr(i, IpFamily.V4)).append(", ")
          .append(Addresses.podCidr(i, IpFamily.V6)).append("]}\n")
          .append("status:\n  addresses:\n")
          .append("    - {type: InternalIP, address: ").append(Addresses.nodeIp(i, IpFamily.V4)).append("}\n")
          .append("    - {type: InternalIP, address: \"").append(Addresses.nodeIp(i, IpFamily.V6)).append("\"}\n")
          .append("  conditions: [{type: Ready, status: \"True\"}]\n---\n");
    }
    sb.append("apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n"
        + "spec: {type: LoadBalancer, clusterIP: 172.30.0.10, clusterIPs: [172.30.0.10, \"fd02::10\"],"
        + " ipFamilies: [IPv4, IPv6], ports: [{port: 80, protocol: TCP}], selector: {app: web}}\n"
        + "status: {loadBalancer: {ingress: [{ip: 5.5.5.5}, {ip: \"2001:db8:5::5\"}]}}\n---\n");
    for (IpFamily f : IpFamily.values()) {
      sb.append("apiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-").append(f == IpFamily.V4 ? "v4" : "v6")
          .append("\n  namespace: shop\n  labels: {kubernetes.io/service-name: web,"
              + " endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}\n")
          .append("addressType: ").append(f == IpFamily.V4 ? "IPv4" : "IPv6").append("\nendpoints:\n");
      for (int i = 1; i <= 2; i++) {
        String pod = i == 1 ? "pod-a1" : "pod-b1";
        sb.append("  - addresses: [\"").append(Addresses.podIp(i, 1, f)).append("\"]\n")
            .append("    nodeName: ").append(i == 1 ? "node-a" : "node-b").append("\n")
            .append("    conditions: {ready: true}\n")
            .append("    targetRef: {kind: Pod, namespace: shop, name: ").append(pod).append("}\n");
      }
      sb.append("---\n");
    }
    sb.append("apiVersion: k8s.ovn.org/v1\nkind: EgressService\nmetadata: {name: web, namespace: shop}\n"
        + "spec: {sourceIPBy: LoadBalancerIP, network: \"100\"}\nstatus: {host: node-a}\n");
    return sb.toString();
  }
}

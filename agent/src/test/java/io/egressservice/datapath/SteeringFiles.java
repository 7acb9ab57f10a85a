package io.egressservice.datapath;

import static io.egressservice.datapath.SteeringTopology.*;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The cluster of {@link SteeringTopology} as kubectl-style objects for {@code apply}: node-a and node-b
 * (InternalIPs of both families unless told otherwise), and optionally the dual-stack EgressService
 * {@code default/web} with its LoadBalancer Service and one EndpointSlice per family: pod-a on node-a,
 * pod-b on node-b (pod-b2 is in no service).
 */
final class SteeringFiles {
  private SteeringFiles() {}

  /** What to write: whether the service exists, its status.host, and whether node-a has an IPv6 InternalIP. */
  record Cluster(boolean service, String host, boolean nodeAIpv6) {}

  static Cluster web(String host) {
    return new Cluster(true, host, true);
  }

  static Cluster nodesOnly() {
    return new Cluster(false, "", true);
  }

  static Path write(Path dir, Cluster c) {
    List<String> docs = new ArrayList<>();
    docs.add(node(NODE_A, NODE_A_IP, c.nodeAIpv6() ? NODE_A_IP6 : null, "10.128.0.0/24", "fd10:128::/64"));
    docs.add(node(NODE_B, NODE_B_IP, NODE_B_IP6, "10.128.1.0/24", "fd10:128:1::/64"));
    if (c.service()) {
      docs.add(egressService(c.host()));
      docs.add(loadBalancer());
      docs.add(slice("web-v4", "IPv4", POD_A, POD_B));
      docs.add(slice("web-v6", "IPv6", POD_A6, POD_B6));
    }
    return ClusterFiles.writeDocuments(dir, docs);
  }

  private static String node(String name, String ip, String ip6, String podCidr, String podCidr6) {
    return "apiVersion: v1\n"
        + "kind: Node\n"
        + "metadata:\n"
        + "  name: " + name + "\n"
        + "spec:\n"
        + "  podCIDRs: [" + podCidr + ", \"" + podCidr6 + "\"]\n"
        + "status:\n"
        + "  addresses:\n"
        + "    - {type: InternalIP, address: " + ip + "}\n"
        + (ip6 == null ? "" : "    - {type: InternalIP, address: \"" + ip6 + "\"}\n")
        + "    - {type: Hostname, address: " + name + "}\n";
  }

  private static String egressService(String host) {
    return "apiVersion: k8s.ovn.org/v1\n"
        + "kind: EgressService\n"
        + "metadata:\n"
        + "  name: web\n"
        + "  namespace: default\n"
        + "  creationTimestamp: \"2026-11-01T10:00:00Z\"\n"
        + "spec:\n"
        + "  sourceIPBy: LoadBalancerIP\n"
        + "status:\n"
        + "  host: " + host + "\n";
  }

  private static String loadBalancer() {
    return "apiVersion: v1\n"
        + "kind: Service\n"
        + "metadata:\n"
        + "  name: web\n"
        + "  namespace: default\n"
        + "spec:\n"
        + "  type: LoadBalancer\n"
        + "  ipFamilyPolicy: RequireDualStack\n"
        + "  clusterIP: 172.30.0.10\n"
        + "  clusterIPs: [172.30.0.10, \"fd02::10\"]\n"
        + "  ports: [{port: 80, targetPort: " + PORT + ", protocol: TCP}]\n"
        + "  selector: {app: web}\n"
        + "status:\n"
        + "  loadBalancer:\n"
        + "    ingress:\n"
        + "      - ip: " + LB_IP + "\n"
        + "      - ip: \"" + LB_IP6 + "\"\n";
  }

  private static String slice(String name, String type, String onA, String onB) {
    return "apiVersion: discovery.k8s.io/v1\n"
        + "kind: EndpointSlice\n"
        + "metadata:\n"
        + "  name: " + name + "\n"
        + "  namespace: default\n"
        + "  labels: {kubernetes.io/service-name: web,"
        + " endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}\n"
        + "addressType: " + type + "\n"
        + "endpoints:\n"
        + "  - addresses: [\"" + onA + "\"]\n"
        + "    nodeName: " + NODE_A + "\n"
        + "  - addresses: [\"" + onB + "\"]\n"
        + "    nodeName: " + NODE_B + "\n"
        + "ports: [{port: " + PORT + ", protocol: TCP}]\n";
  }
}

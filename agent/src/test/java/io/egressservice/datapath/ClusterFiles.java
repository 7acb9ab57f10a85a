package io.egressservice.datapath;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** The cluster objects the datapath tests hand to {@code apply}: the two Nodes plus the services of a case. */
final class ClusterFiles {
  static final String NODE = "node";
  static final String NODE2 = "node2";

  private ClusterFiles() {}

  /** An EgressService, its LoadBalancer Service and an EndpointSlice with {@code endpoints} on {@link #NODE}. */
  record Service(String name, String sourceIpBy, String network, String host, String lbIp, String clusterIp,
      List<String> endpoints) {}

  static Service service(String name, String sourceIpBy, String network, String host, String lbIp, String clusterIp,
      String... endpoints) {
    return new Service(name, sourceIpBy, network, host, lbIp, clusterIp, List.of(endpoints));
  }

  /** Writes {@code dir/objects.yaml} with the Nodes and {@code services}; returns the file. */
  static Path write(Path dir, Service... services) {
    return write(dir, true, services);
  }

  /** As {@link #write(Path, Service...)}, the Nodes without {@code spec.podCIDRs} when {@code podCidrs} is false. */
  static Path write(Path dir, boolean podCidrs, Service... services) {
    List<String> docs = new ArrayList<>();
    docs.add(node(NODE, Topology.NODE_IP, podCidrs ? "10.128.0.0/24" : null));
    docs.add(node(NODE2, Topology.NODE2_IP, podCidrs ? "10.128.1.0/24" : null));
    for (Service s : services) {
      docs.add(egressService(s));
      docs.add(loadBalancer(s));
      docs.add(endpointSlice(s));
    }
    return writeDocuments(dir, docs);
  }

  /** Writes {@code docs} as one multi-document {@code dir/objects.yaml}; returns the file. */
  static Path writeDocuments(Path dir, List<String> docs) {
    try {
      Files.createDirectories(dir);
      Path file = dir.resolve("objects.yaml");
      Files.writeString(file, String.join("---\n", docs));
      return file;
    } catch (IOException e) {
      throw new UncheckedIOException(e);
    }
  }

  private static String node(String name, String ip, String podCidr) {
    return "apiVersion: v1\n"
        + "kind: Node\n"
        + "metadata:\n"
        + "  name: " + name + "\n"
        + "  labels: {kubernetes.io/hostname: " + name + "}\n"
        + (podCidr == null ? "spec: {}\n" : "spec:\n  podCIDRs: [" + podCidr + "]\n")
        + "status:\n"
        + "  addresses:\n"
        + "    - {type: InternalIP, address: " + ip + "}\n"
        + "  conditions:\n"
        + "    - {type: Ready, status: \"True\"}\n";
  }

  private static String egressService(Service s) {
    return "apiVersion: k8s.ovn.org/v1\n"
        + "kind: EgressService\n"
        + "metadata:\n"
        + "  name: " + s.name() + "\n"
        + "  namespace: default\n"
        + "  creationTimestamp: \"2026-11-01T10:00:00Z\"\n"
        + "spec:\n"
        + "  sourceIPBy: " + s.sourceIpBy() + "\n"
        + (s.network() == null ? "" : "  network: \"" + s.network() + "\"\n")
        + "status:\n"
        + "  host: " + s.host() + "\n";
  }

  private static String loadBalancer(Service s) {
    return "apiVersion: v1\n"
        + "kind: Service\n"
        + "metadata:\n"
        + "  name: " + s.name() + "\n"
        + "  namespace: default\n"
        + "spec:\n"
        + "  type: LoadBalancer\n"
        + "  selector: {app: " + s.name() + "}\n"
        + "  clusterIP: " + s.clusterIp() + "\n"
        + "  clusterIPs: [" + s.clusterIp() + "]\n"
        + "  ports: [{port: " + Topology.LB_PORT + ", targetPort: " + Topology.PORT + ", protocol: TCP}]\n"
        + "status:\n"
        + "  loadBalancer:\n"
        + "    ingress:\n"
        + "      - ip: " + s.lbIp() + "\n";
  }

  private static String endpointSlice(Service s) {
    StringBuilder eps = new StringBuilder();
    for (String ep : s.endpoints()) {
      eps.append("  - addresses: [").append(ep).append("]\n")
          .append("    nodeName: ").append(NODE).append("\n")
          .append("    conditions: {ready: true}\n");
    }
    return "apiVersion: discovery.k8s.io/v1\n"
        + "kind: EndpointSlice\n"
        + "metadata:\n"
        + "  name: " + s.name() + "-v4\n"
        + "  namespace: default\n"
        + "  labels: {kubernetes.io/service-name: " + s.name() + ",\n"
        + "    endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}\n"
        + "addressType: IPv4\n"
        + "endpoints:\n"
        + eps
        + "ports: [{port: " + Topology.PORT + ", protocol: TCP}]\n";
  }
}

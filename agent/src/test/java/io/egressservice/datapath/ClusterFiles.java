package io.egressservice.datapath;

import io.egressservice.datapath.ObjectsYaml.Endpoint;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

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
    docs.add(node(NODE, Topology.NODE_IP, podCidrs, "10.128.0.0/24"));
    docs.add(node(NODE2, Topology.NODE2_IP, podCidrs, "10.128.1.0/24"));
    for (Service s : services) {
      docs.add(ObjectsYaml.egressService(s.name(), s.sourceIpBy(), Optional.ofNullable(s.network()), s.host()));
      docs.add(ObjectsYaml.loadBalancer(s.name(), List.of(s.clusterIp()), List.of(s.lbIp()), Topology.LB_PORT,
          Topology.PORT).yaml());
      docs.add(ObjectsYaml.endpointSlice(s.name() + "-v4", s.name(), "IPv4",
          s.endpoints().stream().map(e -> Endpoint.ready(e, NODE)).toList(), Topology.PORT));
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

  private static String node(String name, String ip, boolean withPodCidr, String podCidr) {
    ObjectsYaml.Node node = ObjectsYaml.node(name).hostnameLabel().internalIps(ip).ready();
    return (withPodCidr ? node.podCidrs(podCidr) : node).yaml();
  }
}

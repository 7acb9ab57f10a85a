package io.egressservice.datapath;

import static io.egressservice.datapath.SteeringTopology.*;

import io.egressservice.datapath.ObjectsYaml.Endpoint;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

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
    ObjectsYaml.Node a = ObjectsYaml.node(NODE_A).internalIps(NODE_A_IP);
    docs.add((c.nodeAIpv6() ? a.internalIps(NODE_A_IP6) : a).hostnameAddress()
        .podCidrs("10.128.0.0/24", "fd10:128::/64").yaml());
    docs.add(ObjectsYaml.node(NODE_B).internalIps(NODE_B_IP, NODE_B_IP6).hostnameAddress()
        .podCidrs("10.128.1.0/24", "fd10:128:1::/64").yaml());
    if (c.service()) {
      docs.add(ObjectsYaml.egressService("web", "LoadBalancerIP", Optional.empty(), c.host()));
      docs.add(ObjectsYaml.loadBalancer("web", List.of("172.30.0.10", "fd02::10"), List.of(LB_IP, LB_IP6), 80, PORT)
          .ipFamilyPolicy("RequireDualStack").yaml());
      docs.add(slice("web-v4", "IPv4", POD_A, POD_B));
      docs.add(slice("web-v6", "IPv6", POD_A6, POD_B6));
    }
    return ClusterFiles.writeDocuments(dir, docs);
  }

  private static String slice(String name, String type, String onA, String onB) {
    return ObjectsYaml.endpointSlice(name, "web", type,
        List.of(Endpoint.unstated(onA, NODE_A), Endpoint.unstated(onB, NODE_B)), PORT);
  }
}

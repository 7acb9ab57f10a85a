package io.egressservice.datapath;

import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * Nodes, EgressServices, LoadBalancer Services and EndpointSlices as the YAML text {@code apply --objects} reads:
 * the one builder of that text for the datapath tests' cluster files ({@link ClusterFiles}, {@link SteeringFiles},
 * {@link ParityDatapathTest}). Every string value is quoted, so that no address or CIDR reads as anything else.
 */
final class ObjectsYaml {
  private static final String NAMESPACE = "default";
  private static final String CREATED = "2026-11-01T10:00:00Z";

  private ObjectsYaml() {}

  /** A Node named {@code name} with nothing else yet. */
  static Node node(String name) {
    return new Node(name);
  }

  /** A Node: its InternalIPs, pod CIDRs and, where asked, its hostname label and address and its Ready condition. */
  static final class Node {
    private final String name;
    private final List<String> internalIps = new ArrayList<>();
    private final List<String> podCidrs = new ArrayList<>();
    private boolean hostnameLabel;
    private boolean hostnameAddress;
    private boolean ready;

    private Node(String name) {
      this.name = name;
    }

    Node internalIps(String... ips) {
      internalIps.addAll(List.of(ips));
      return this;
    }

    Node podCidrs(String... cidrs) {
      podCidrs.addAll(List.of(cidrs));
      return this;
    }

    /** The label {@code kubernetes.io/hostname: <name>}. */
    Node hostnameLabel() {
      hostnameLabel = true;
      return this;
    }

    /** An address of type Hostname, after the InternalIPs. */
    Node hostnameAddress() {
      hostnameAddress = true;
      return this;
    }

    /** The condition Ready, True. */
    Node ready() {
      ready = true;
      return this;
    }

    String yaml() {
      StringBuilder y = new StringBuilder("apiVersion: v1\nkind: Node\nmetadata:\n  name: " + q(name) + "\n");
      if (hostnameLabel) {
        y.append("  labels: {kubernetes.io/hostname: ").append(q(name)).append("}\n");
      }
      y.append(podCidrs.isEmpty() ? "spec: {}\n" : "spec:\n  podCIDRs: " + list(podCidrs) + "\n");
      y.append("status:\n  addresses:\n");
      internalIps.forEach(ip -> y.append("    - {type: InternalIP, address: ").append(q(ip)).append("}\n"));
      if (hostnameAddress) {
        y.append("    - {type: Hostname, address: ").append(q(name)).append("}\n");
      }
      if (ready) {
        y.append("  conditions:\n    - {type: Ready, status: \"True\"}\n");
      }
      return y.toString();
    }
  }

  /** EgressService {@code default/name}, with {@code network} where given, and status.host {@code host}. */
  static String egressService(String name, String sourceIpBy, Optional<String> network, String host) {
    return namespaced("k8s.ovn.org/v1", "EgressService", name)
        + "  creationTimestamp: " + q(CREATED) + "\n"
        + "spec:\n"
        + "  sourceIPBy: " + sourceIpBy + "\n"
        + network.map(n -> "  network: " + q(n) + "\n").orElse("")
        + "status:\n"
        + "  host: " + q(host) + "\n";
  }

  /**
   * LoadBalancer Service {@code default/name} (selector app={@code name}) at {@code clusterIps} (the first is
   * spec.clusterIP) and {@code lbIps}, one TCP port {@code port} to {@code targetPort}.
   */
  static LoadBalancer loadBalancer(String name, List<String> clusterIps, List<String> lbIps, int port, int targetPort) {
    return new LoadBalancer(name, clusterIps, lbIps, port, targetPort);
  }

  /** A LoadBalancer Service, with a node port, an externalTrafficPolicy or a dual-stack policy where asked. */
  static final class LoadBalancer {
    private final String name;
    private final List<String> clusterIps;
    private final List<String> lbIps;
    private final int port;
    private final int targetPort;
    private Optional<Integer> nodePort = Optional.empty();
    private Optional<String> externalTrafficPolicy = Optional.empty();
    private Optional<String> ipFamilyPolicy = Optional.empty();

    private LoadBalancer(String name, List<String> clusterIps, List<String> lbIps, int port, int targetPort) {
      this.name = name;
      this.clusterIps = List.copyOf(clusterIps);
      this.lbIps = List.copyOf(lbIps);
      this.port = port;
      this.targetPort = targetPort;
    }

    LoadBalancer nodePort(int nodePort) {
      this.nodePort = Optional.of(nodePort);
      return this;
    }

    LoadBalancer externalTrafficPolicy(String policy) {
      this.externalTrafficPolicy = Optional.of(policy);
      return this;
    }

    LoadBalancer ipFamilyPolicy(String policy) {
      this.ipFamilyPolicy = Optional.of(policy);
      return this;
    }

    String yaml() {
      return namespaced("v1", "Service", name)
          + "spec:\n"
          + "  type: LoadBalancer\n"
          + externalTrafficPolicy.map(p -> "  externalTrafficPolicy: " + p + "\n").orElse("")
          + ipFamilyPolicy.map(p -> "  ipFamilyPolicy: " + p + "\n").orElse("")
          + "  selector: {app: " + q(name) + "}\n"
          + "  clusterIP: " + q(clusterIps.get(0)) + "\n"
          + "  clusterIPs: " + list(clusterIps) + "\n"
          + "  ports: [{port: " + port + ", targetPort: " + targetPort
          + nodePort.map(p -> ", nodePort: " + p).orElse("") + ", protocol: TCP}]\n"
          + "status:\n"
          + "  loadBalancer:\n"
          + "    ingress:\n"
          + lbIps.stream().map(ip -> "      - ip: " + q(ip) + "\n").collect(Collectors.joining());
    }
  }

  /** An endpoint of a slice: its address, its node, and whether it states the condition ready (true). */
  record Endpoint(String address, String node, boolean statesReady) {
    static Endpoint ready(String address, String node) {
      return new Endpoint(address, node, true);
    }

    /** An endpoint without conditions (which Kubernetes reads as ready). */
    static Endpoint unstated(String address, String node) {
      return new Endpoint(address, node, false);
    }
  }

  /**
   * EndpointSlice {@code default/name} of Service {@code service}, managed by the endpointslice controller, of
   * {@code addressType} (IPv4, IPv6), with {@code endpoints} and one TCP port {@code port}.
   */
  static String endpointSlice(String name, String service, String addressType, List<Endpoint> endpoints, int port) {
    StringBuilder y = new StringBuilder(namespaced("discovery.k8s.io/v1", "EndpointSlice", name)
        + "  labels: {kubernetes.io/service-name: " + q(service) + ",\n"
        + "    endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}\n"
        + "addressType: " + addressType + "\n"
        + "endpoints:\n");
    for (Endpoint e : endpoints) {
      y.append("  - addresses: [").append(q(e.address())).append("]\n")
          .append("    nodeName: ").append(q(e.node())).append("\n");
      if (e.statesReady()) {
        y.append("    conditions: {ready: true}\n");
      }
    }
    return y.append("ports: [{port: ").append(port).append(", protocol: TCP}]\n").toString();
  }

  /** The head of an object in namespace default, open for more metadata lines. */
  private static String namespaced(String apiVersion, String kind, String name) {
    return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: " + q(name) + "\n  namespace: "
        + NAMESPACE + "\n";
  }

  private static String q(String value) {
    return "\"" + value + "\"";
  }

  private static String list(List<String> values) {
    return values.stream().map(ObjectsYaml::q).collect(Collectors.joining(", ", "[", "]"));
  }
}

package io.egressservice.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Writes a large object set: one EgressService on table 100 with many endpoints (tests and benchmarks). */
public final class BigObjects {
  private BigObjects() {}

  /** LoadBalancerIP mode, host node-a; {@code endpoints} pod addresses in 10.128.0.0/14 on node-a. */
  static Path write(Path dir, int endpoints) throws IOException {
    return write(dir, endpoints, "LoadBalancerIP", "node-a", "big.yaml");
  }

  /**
   * {@code endpoints} pod addresses in 10.128.0.0/14 on node-a, a LoadBalancer Service (clusterIP
   * 172.30.9.9, LB IP 5.5.5.5) and its EgressService with {@code sourceIPBy} and {@code status.host};
   * written to {@code dir/file}; returns the directory.
   */
  public static Path write(Path dir, int endpoints, String sourceIpBy, String host, String file) throws IOException {
    Files.createDirectories(dir);
    StringBuilder sb = new StringBuilder();
    sb.append("""
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: big, namespace: load}
        spec: {sourceIPBy: SOURCE_IP_BY, network: "100"}
        status: {host: HOST}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: big, namespace: load}
        spec: {type: LoadBalancer, clusterIP: 172.30.9.9, clusterIPs: [172.30.9.9], selector: {app: big}}
        status: {loadBalancer: {ingress: [{ip: 5.5.5.5}]}}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata:
          name: big-1
          namespace: load
          labels: {kubernetes.io/service-name: big, endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}
        addressType: IPv4
        endpoints:
        """.replace("SOURCE_IP_BY", sourceIpBy).replace("HOST", host));
    for (int i = 0; i < endpoints; i++) {
      int n = i + 2;
      sb.append("  - {addresses: [10.").append(128 + (n >> 16)).append('.').append((n >> 8) & 255).append('.')
          .append(n & 255).append("], nodeName: node-a}\n");
    }
    Files.writeString(dir.resolve(file), sb.toString());
    return dir;
  }
}

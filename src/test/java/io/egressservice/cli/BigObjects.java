package io.egressservice.cli;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Writes a large object set: one LoadBalancerIP EgressService on table 100 with many endpoints. */
final class BigObjects {
  private BigObjects() {}

  /** {@code endpoints} pod addresses in 10.128.0.0/14 on node-a; returns the directory. */
  static Path write(Path dir, int endpoints) throws IOException {
    Files.createDirectories(dir);
    StringBuilder sb = new StringBuilder();
    sb.append("""
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: big, namespace: load}
        spec: {sourceIPBy: LoadBalancerIP, network: "100"}
        status: {host: node-a}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: big, namespace: load}
        spec: {type: LoadBalancer, clusterIP: 172.30.9.9, clusterIPs: [172.30.9.9]}
        status: {loadBalancer: {ingress: [{ip: 5.5.5.5}]}}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata:
          name: big-1
          namespace: load
          labels: {kubernetes.io/service-name: big}
        addressType: IPv4
        endpoints:
        """);
    for (int i = 0; i < endpoints; i++) {
      int n = i + 2;
      sb.append("  - {addresses: [10.").append(128 + (n >> 16)).append('.').append((n >> 8) & 255).append('.')
          .append(n & 255).append("], nodeName: node-a}\n");
    }
    Files.writeString(dir.resolve("big.yaml"), sb.toString());
    return dir;
  }
}

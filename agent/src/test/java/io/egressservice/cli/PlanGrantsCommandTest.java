package io.egressservice.cli;

import static io.egressservice.cli.PlanCommandTest.ok;
import static io.egressservice.cli.PlanCommandTest.run;
import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code plan} refuses what the CRD refuses ({@code network: 4294967295}) and the agent's own steering tables, and,
 * with {@code --egress-service-policy=enforce}, reads the Namespace and EgressServicePolicy documents of its files.
 */
class PlanGrantsCommandTest {
  @TempDir Path dir;

  private Path objects(String namespace, String network, String extra) throws IOException {
    Path f = dir.resolve("objects.yaml");
    Files.writeString(f, """
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: web, namespace: %1$s}
        spec: {sourceIPBy: Network, network: "%2$s"}
        status: {host: ALL}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: web, namespace: %1$s}
        spec: {type: LoadBalancer, clusterIPs: [172.30.0.10], selector: {app: web}}
        status: {loadBalancer: {ingress: [{ip: 5.5.5.5}]}}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata:
          name: web-1
          namespace: %1$s
          labels: {kubernetes.io/service-name: web, endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}
        addressType: IPv4
        endpoints: [{addresses: [10.128.0.5], nodeName: n1}]
        """.formatted(namespace, network) + extra);
    return f;
  }

  private static final String POLICY = """
      ---
      apiVersion: egressservice.io/v1alpha1
      kind: EgressServicePolicy
      metadata: {name: cluster}
      spec:
        grants:
        - namespaceSelector: {matchLabels: {team: shop}}
          networks: ["100"]
      ---
      apiVersion: v1
      kind: Namespace
      metadata: {name: shop, labels: {team: shop}}
      """;

  private static JsonNode service(PlanCommandTest.Run r) {
    return r.json().path("services").get(0);
  }

  @Test
  void planRefusesTheLargestTableNumberTheKernelTakesButTheCrdRefuses() throws IOException {
    PlanCommandTest.Run r = ok("plan", "--objects", objects("shop", "4294967295", "").toString(), "--node", "n1",
        "-o", "json");

    assertThat(r.json().path("rules")).isEmpty();
    assertThat(service(r).path("configured").asBoolean()).isFalse();
    assertThat(service(r).path("reason").asText()).contains("'4294967295' is above the largest table number allowed");
    assertThat(ok("plan", "--objects", objects("shop", "4294967294", "").toString(), "--node", "n1").out())
        .contains("from 10.128.0.5 lookup 4294967294");
  }

  @Test
  void planRefusesTheAgentsSteeringTable() throws IOException {
    PlanCommandTest.Run r = ok("plan", "--objects", objects("shop", "7000", "").toString(), "--node", "n1",
        "-o", "json");

    assertThat(r.json().path("rules")).isEmpty();
    assertThat(service(r).path("reason").asText()).contains("steering tables (--steer-table 7000");
    PlanCommandTest.Run moved = ok("plan", "--objects", objects("shop", "7000", "").toString(), "--node", "n1",
        "--steer-table", "9000", "-o", "json");
    assertThat(service(moved).path("configured").asBoolean()).isTrue();
  }

  @Test
  void enforcedThePolicyOfTheFilesGrantsAndRefuses() throws IOException {
    String granted = objects("shop", "100", POLICY).toString();
    assertThat(ok("plan", "--objects", granted, "--node", "n1", "--egress-service-policy", "enforce").out())
        .contains("from 10.128.0.5 lookup 100");

    PlanCommandTest.Run refused = ok("plan", "--objects", objects("other", "100", POLICY).toString(), "--node", "n1",
        "--egress-service-policy", "enforce", "-o", "json");
    assertThat(refused.json().path("rules")).isEmpty();
    assertThat(service(refused).path("reason").asText()).startsWith("not granted: ")
        .contains("selects namespace 'other'");

    // off (the default): the same files change nothing
    assertThat(ok("plan", "--objects", objects("other", "100", POLICY).toString(), "--node", "n1").out())
        .contains("from 10.128.0.5 lookup 100");
  }

  @Test
  void enforcedWithoutAPolicyDocumentNothingIsGranted() throws IOException {
    PlanCommandTest.Run r = ok("plan", "--objects", objects("shop", "100", "").toString(), "--node", "n1",
        "--egress-service-policy", "enforce", "-o", "json");

    assertThat(r.json().path("rules")).isEmpty();
    assertThat(service(r).path("reason").asText()).contains("there is no EgressServicePolicy 'cluster'");
  }

  @Test
  void anUnknownPolicyModeIsAUserError() throws IOException {
    PlanCommandTest.Run r = run("plan", "--objects", objects("shop", "100", "").toString(), "--node", "n1",
        "--egress-service-policy", "audit");

    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.err()).contains("--egress-service-policy must be off or enforce, not 'audit'");
  }
}

package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Typos in YAML were ignored silently, and a number where the CRD wants a
 * string was accepted although the API server refuses it.
 */
class StrictObjectFieldsTest {
  private static final String[] PLAN = {"plan", "--node", "node-a", "-o", "json", "--objects", "examples"};

  @TempDir Path dir;

  private InProcess.Result plan(String yaml) throws IOException {
    Path file = Files.writeString(dir.resolve("extra.yaml"), yaml);
    String[] args = java.util.Arrays.copyOf(PLAN, PLAN.length + 1);
    args[PLAN.length] = file.toString();
    return InProcess.run(args);
  }

  @Test
  void typosInFieldNamesAreWarnedAboutNamingTheFileTheObjectAndTheField() throws IOException {
    InProcess.Result r = plan("""
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: typo, namespace: shop}
        spec: {sourceIPBY: Network, network: "100"}
        ---
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: other, namespace: shop}
        spce: {sourceIPBy: Network}
        """);

    assertThat(r.exit()).as(r.err()).isZero();
    Path file = dir.resolve("extra.yaml");
    assertThat(r.err().lines()).containsExactly(
        "warning: " + file + ": EgressService shop/typo (document 1): unknown field \"spec.sourceIPBY\""
            + " (did you mean \"spec.sourceIPBy\"?), ignored (kubectl's strict validation refuses it)",
        "warning: " + file + ": EgressService shop/other (document 2): unknown field \"spce\""
            + " (did you mean \"spec\"?), ignored (kubectl's strict validation refuses it)");
  }

  @Test
  void unknownFieldsOfCoreKindsAreWarnedAboutToo() throws IOException {
    InProcess.Result r = plan("""
        apiVersion: v1
        kind: Service
        metadata: {name: s, namespace: shop, lables: {a: b}}
        spec: {type: LoadBalancer, clusterIPs: [172.30.0.99], ports: [{port: 80, protcol: TCP}]}
        """);

    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.err()).contains("Service shop/s (document 1): unknown field \"metadata.lables\" (did you mean"
        + " \"metadata.labels\"?)", "unknown field \"spec.ports[0].protcol\" (did you mean \"spec.ports[0].protocol\"?)");
  }

  @Test
  void theExamplesAndEveryKnownFieldGiveNoWarning() {
    InProcess.Result r = InProcess.run(PLAN);
    assertThat(r.exit()).isZero();
    assertThat(r.err()).isEmpty();
  }

  @Test
  void kubectlGetOutputWithManagedFieldsAndStatusGivesNoWarning() {
    // as 'kubectl get -o yaml' prints them: managedFields (free-form "f:spec" keys), status, uid, ...
    InProcess.Result r = InProcess.run("plan", "--node", "worker-a1", "--objects", "agent/src/test/resources/informers");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.err()).isEmpty();
  }

  @Test
  void anIntegerNetworkIsRefusedWithExitOneAsTheApiServerRefusesIt() throws IOException {
    InProcess.Result r = plan("""
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: web, namespace: shop}
        spec: {network: 100}
        """);

    assertThat(r.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(r.out()).isEmpty();
    assertThat(r.err().strip()).isEqualTo("error: " + dir.resolve("extra.yaml") + ": EgressService shop/web (document 1):"
        + " spec.network: must be a string, not the number 100 (the API server refuses it; quote it: \"100\")");
  }
}

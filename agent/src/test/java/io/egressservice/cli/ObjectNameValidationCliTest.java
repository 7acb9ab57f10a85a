package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Over-long names, the CLI: {@code apply} with a namespace/name over 128 bytes exited 2 with a stack trace.
 * Such a name is one no API server accepts (a Service's name is a DNS label of at most 63 characters), so it is a
 * user error: exit 1, naming the file and the object, before anything touches a kernel.
 */
class ObjectNameValidationCliTest {
  @TempDir Path tmp;

  Path objects(String name) throws Exception {
    Path file = tmp.resolve("long.yaml");
    Files.writeString(file, """
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: NAME, namespace: default}
        spec: {network: "100"}
        status: {host: node-a}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: NAME, namespace: default}
        spec: {type: LoadBalancer, clusterIP: 172.30.0.10, selector: {app: web}}
        status: {loadBalancer: {ingress: [{ip: 5.5.5.5}]}}
        """.replace("NAME", name));
    return file;
  }

  @Test
  void applyWithANameNoApiServerAcceptsIsAUserErrorNamingTheObject() throws Exception {
    Path file = objects("w".repeat(130));

    // --netns of a namespace that does not exist: had the objects been accepted, this would be exit 2
    InProcess.Result r = InProcess.run("apply", "--objects", file.toString(), "--node", "node-a", "--netns",
        "no-such-netns-f6");

    assertThat(r.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(r.err()).startsWith("error: " + file + ": EgressService default/" + "w".repeat(130) + " (document 1):")
        .contains("metadata.name is 130 characters long; at most 63 are allowed")
        .doesNotContain("Exception").doesNotContain("\tat ");
  }

  @Test
  void planRefusesANameOver63CharactersAndAcceptsTheLongestValidName() throws Exception {
    assertThat(InProcess.run("plan", "--objects", objects("w".repeat(64)).toString(), "--node", "node-a").exit())
        .isEqualTo(Main.EXIT_USER_ERROR);

    InProcess.Result ok = InProcess.run("plan", "--objects", objects("w".repeat(63)).toString(), "--node", "node-a");
    assertThat(ok.exit()).isZero();
    assertThat(ok.err()).doesNotContain("error");
  }

  @Test
  void namesThatAreNotDnsLabelsAreRefused() throws Exception {
    InProcess.Result r = InProcess.run("plan", "--objects", objects("Web_1").toString(), "--node", "node-a");

    assertThat(r.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(r.err()).contains("metadata.name 'Web_1' is not the name of its Service, a DNS-1035 label");
  }
}

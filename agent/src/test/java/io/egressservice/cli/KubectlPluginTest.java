package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.fabric8.kubernetes.api.model.PodBuilder;
import io.fabric8.kubernetes.client.KubernetesClient;
import io.fabric8.kubernetes.client.server.mock.KubernetesCrudDispatcher;
import io.fabric8.kubernetes.client.server.mock.KubernetesMockServer;
import io.fabric8.mockwebserver.Context;
import io.fabric8.mockwebserver.MockWebServer;
import io.fabric8.mockwebserver.http.Dispatcher;
import io.fabric8.mockwebserver.http.MockResponse;
import io.fabric8.mockwebserver.http.RecordedRequest;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code scripts/kubectl-egress_service} against the mock API server, run by a fake {@code kubectl} on PATH that
 * hands every {@code get} to the real kubectl (pointed at the mock server) and records the {@code exec} it is asked
 * for instead of running it: the exec must reach the agent pod on the right node with the user's arguments.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class KubectlPluginTest {
  static final Path PLUGIN = Path.of("scripts", "kubectl-egress_service").toAbsolutePath();
  /** The image's launcher, which execs its entrypoint. */
  static final List<String> AGENT = List.of("/usr/local/bin/egress-service-agent");

  @TempDir Path tmp;
  KubernetesMockServer server;
  Path kubeconfig;

  @BeforeAll
  void startApi() {
    assumeTrue(realKubectl() != null, "kubectl is not installed");
    KubernetesCrudDispatcher crud = new KubernetesCrudDispatcher();
    server = new KubernetesMockServer(new Context(), new MockWebServer(), new HashMap<>(), new Discovery(crud), false);
    server.init();
    KubernetesClient client = server.createClient();
    pod(client, "shop", "web-5d9", "node-b", false, "10.128.1.7", "fd00:10:128:1::7");
    pod(client, "shop", "web-77a", "node-a", false, "10.128.0.9", "fd00:10:128::9");
    pod(client, "kube-system", "proxy-b", "node-b", true, "192.168.0.2");
    pod(client, "egress-service-agent", "egress-service-agent-aaaa", "node-a", true, "192.168.0.1");
    pod(client, "egress-service-agent", "egress-service-agent-bbbb", "node-b", true, "192.168.0.2");
    pod(client, "shop", "lonely", "node-c", false, "10.128.2.3");
    client.close();
  }

  @AfterAll
  void stopApi() {
    if (server != null) {
      server.destroy();
    }
  }

  @BeforeEach
  void writeKubeconfig() throws IOException {
    kubeconfig = Files.writeString(tmp.resolve("kubeconfig"), "apiVersion: v1\nkind: Config\n"
        + "clusters: [{name: mock, cluster: {server: \"" + server.url("/") + "\"}}]\n"
        + "users: [{name: mock, user: {token: mock}}]\n"
        + "contexts: [{name: mock, context: {cluster: mock, user: mock, namespace: default}}]\n"
        + "current-context: mock\n");
  }

  @Test
  void explainByNameExecsExplainInTheAgentOnThePodsNode() throws Exception {
    Run r = plugin("explain", "shop/web-5d9", "--to", "203.0.113.10", "-o", "json");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.execs()).containsExactly(exec("egress-service-agent-bbbb", "explain", "shop/web-5d9", "--pod-ip",
        "10.128.1.7,fd00:10:128:1::7", "--to", "203.0.113.10", "-o", "json"));
    assertThat(r.out()).isEqualTo("what the agent printed\n");
  }

  /**
   * kubectl puts no flag before a plugin's name: its global flags come after it, anywhere, and must reach every
   * kubectl call (here the only kubeconfig is the one --kubeconfig names); -n names the pod's namespace.
   */
  @Test
  void kubectlsGlobalFlagsAnywhereOnTheLineReachEveryKubectlCall() throws Exception {
    Path elsewhere = tmp.resolve("elsewhere");
    Files.move(kubeconfig, elsewhere);
    Run r = plugin("--context", "mock", "explain", "web-5d9", "-n", "shop", "--to", "203.0.113.10",
        "--kubeconfig=" + elsewhere, "--request-timeout", "20s");

    assertThat(r.exit()).as(r.err()).isZero();
    List<String> flags = List.of("--context", "mock", "--kubeconfig=" + elsewhere, "--request-timeout", "20s");
    List<String> expected = new ArrayList<>(flags);
    expected.addAll(exec("egress-service-agent-bbbb", "explain", "shop/web-5d9", "--pod-ip",
        "10.128.1.7,fd00:10:128:1::7", "--to", "203.0.113.10"));
    assertThat(r.execs()).containsExactly(expected);

    Run status = plugin("status", "node-a", "--kubeconfig", elsewhere.toString(), "-o", "json");
    assertThat(status.exit()).as(status.err()).isZero();
    List<String> statusExec = new ArrayList<>(List.of("--kubeconfig", elsewhere.toString()));
    statusExec.addAll(exec("egress-service-agent-aaaa", "status", "-o", "json"));
    assertThat(status.execs()).containsExactly(statusExec);
  }

  @Test
  void explainByAddressFindsThePodOffTheHostNetworkAndItsNode() throws Exception {
    Run v6 = plugin("explain", "fd00:10:128::9");
    assertThat(v6.exit()).as(v6.err()).isZero();
    assertThat(v6.execs()).containsExactly(exec("egress-service-agent-aaaa", "explain", "fd00:10:128::9"));
    Run v4 = plugin("explain", "10.128.1.7");
    assertThat(v4.execs()).containsExactly(exec("egress-service-agent-bbbb", "explain", "10.128.1.7"));
  }

  @Test
  void statusExecsStatusInThatNodesAgent() throws Exception {
    Run r = plugin("status", "node-a", "-o", "json");
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.execs()).containsExactly(exec("egress-service-agent-aaaa", "status", "-o", "json"));
  }

  @Test
  void theCommandItExecsIsTheLauncherTheImageBuildsOnPath() throws IOException {
    // kubectl exec needs a path that exists in the image: both image builds compile the launcher there
    String launcher = AGENT.get(0);
    assertThat(Files.readString(Path.of("Dockerfile"))).contains("-o /out/application" + launcher + " ");
    assertThat(Files.readString(Path.of("scripts", "build-image.sh")))
        .contains("-o \"$L/application" + launcher + "\" ");
  }

  @Test
  void aPodWhoseNodeHasNoAgentIsOneLineAndNoExec() throws Exception {
    Run r = plugin("explain", "shop/lonely");
    assertThat(r.exit()).isEqualTo(1);
    assertThat(r.execs()).isEmpty();
    assertThat(r.err()).isEqualTo("kubectl egress-service: no agent pod (app.kubernetes.io/name=egress-service-agent"
        + " in namespace egress-service-agent) on node node-c\n");
    Run unknown = plugin("explain", "10.9.9.9");
    assertThat(unknown.exit()).isEqualTo(1);
    assertThat(unknown.err()).contains("no pod (off the host network) has address 10.9.9.9");
  }

  /**
   * The support bundle: every agent's status (text and JSON) and version, explain of the pods named (by the
   * addresses read with the user's credentials), the agents' logs; a step the API refuses is listed in errors.txt
   * and the rest is still collected.
   */
  @Test
  void collectWritesOneArchiveWithStatusExplainLogsAndTheStepsThatFailed() throws Exception {
    Path bundle = tmp.resolve("bundle.tar.gz");
    Run r = plugin("collect", "shop/web-5d9", "--output", bundle.toString());
    assertThat(r.exit()).as(r.err()).isZero();
    assertThat(r.out()).contains("wrote " + bundle, "Read it before you share it");

    assertThat(r.execs()).contains(
        exec("egress-service-agent-aaaa", "status"), exec("egress-service-agent-aaaa", "status", "-o", "json"),
        exec("egress-service-agent-bbbb", "status"), exec("egress-service-agent-bbbb", "--version"),
        exec("egress-service-agent-bbbb", "explain", "shop/web-5d9", "--pod-ip", "10.128.1.7,fd00:10:128:1::7"));
    Path out = Files.createDirectories(tmp.resolve("unpacked"));
    Process tar = new ProcessBuilder("tar", "-xzf", bundle.toString(), "-C", out.toString()).inheritIO().start();
    assertThat(tar.waitFor(30, TimeUnit.SECONDS)).isTrue();
    assertThat(tar.exitValue()).isZero();
    Path root;
    try (var dirs = Files.list(out)) {
      root = dirs.findFirst().orElseThrow();
    }
    assertThat(root.getFileName().toString()).startsWith("egress-service-collect-");
    for (String file : List.of("status/node-a.txt", "status/node-b.json", "versions/agent-node-b.txt",
        "explain/shop_web-5d9.txt", "explain/shop_web-5d9.json")) {
      assertThat(root.resolve(file)).as(file).hasContent("what the agent printed");
    }
    assertThat(Files.readString(root.resolve("logs/egress-service-agent-aaaa.log")))
        .startsWith("a log line of logs -n egress-service-agent egress-service-agent-aaaa");
    assertThat(Files.readString(root.resolve("errors.txt"))).as("the mock API has no EgressService kind")
        .contains("cluster/egressservices.yaml: ");
    try (var files = Files.walk(root)) {
      assertThat(files.map(f -> f.getFileName().toString())).noneMatch(n -> n.toLowerCase().contains("secret"));
    }
  }

  @Test
  void helpShowsExamplesAndAnUnknownCommandIsAUsageError() throws Exception {
    Run help = plugin("--help");
    assertThat(help.exit()).isZero();
    assertThat(help.out()).contains("Examples:", "kubectl egress-service explain shop/web-5d9");
    Run wrong = plugin("describe");
    assertThat(wrong.exit()).isEqualTo(2);
    assertThat(wrong.execs()).isEmpty();
  }

  /** {@code kubectl exec} into {@code agentPod}'s agent container of the agent command with {@code args}. */
  static List<String> exec(String agentPod, String... args) {
    List<String> argv = new ArrayList<>(List.of("exec", "-n", "egress-service-agent", agentPod, "-c", "agent", "--"));
    argv.addAll(AGENT);
    argv.addAll(List.of(args));
    return List.copyOf(argv);
  }

  /** The plugin's exit code, stdout, stderr and the argument vector of each {@code kubectl exec} it asked for. */
  record Run(int exit, String out, String err, List<List<String>> execs) {}

  Run plugin(String... args) throws IOException, InterruptedException {
    Path bin = Files.createDirectories(tmp.resolve("bin"));
    Path record = tmp.resolve("execs-" + System.nanoTime());
    Path fake = bin.resolve("kubectl");
    // each exec: its arguments one per line, then a line "--end--"
    Files.writeString(fake, "#!/bin/sh\n"
        + "for a in \"$@\"; do\n"
        + "  case \"$a\" in\n"
        + "    exec)\n"
        + "      for a in \"$@\"; do printf '%s\\n' \"$a\" >> \"$EXEC_RECORD\"; done\n"
        + "      echo --end-- >> \"$EXEC_RECORD\"\n"
        + "      echo 'what the agent printed'\n"
        + "      exit 0 ;;\n"
        + "    logs) echo \"a log line of $*\"; exit 0 ;;\n"
        + "  esac\n"
        + "done\n"
        + "exec '" + realKubectl() + "' \"$@\"\n");
    Files.setPosixFilePermissions(fake, PosixFilePermissions.fromString("rwxr-xr-x"));
    List<String> cmd = new ArrayList<>(List.of("sh", PLUGIN.toString()));
    cmd.addAll(List.of(args));
    ProcessBuilder pb = new ProcessBuilder(cmd);
    pb.environment().put("PATH", bin + ":" + System.getenv("PATH"));
    pb.environment().put("KUBECONFIG", kubeconfig.toString());
    pb.environment().put("HOME", tmp.toString()); // kubectl's discovery cache: not the user's
    pb.environment().put("EXEC_RECORD", record.toString());
    pb.redirectOutput(tmp.resolve("out").toFile()).redirectError(tmp.resolve("err").toFile());
    Process p = pb.start();
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).as("plugin %s finished", List.of(args)).isTrue();
    List<List<String>> execs = new ArrayList<>();
    if (Files.exists(record)) {
      List<String> current = new ArrayList<>();
      for (String line : Files.readAllLines(record)) {
        if (line.equals("--end--")) {
          execs.add(List.copyOf(current));
          current.clear();
        } else {
          current.add(line);
        }
      }
    }
    return new Run(p.exitValue(), Files.readString(tmp.resolve("out")), Files.readString(tmp.resolve("err")),
        List.copyOf(execs));
  }

  static String realKubectl() {
    for (String dir : System.getenv("PATH").split(":")) {
      Path k = Path.of(dir, "kubectl");
      if (Files.isExecutable(k)) {
        return k.toAbsolutePath().toString();
      }
    }
    return null;
  }

  static void pod(KubernetesClient client, String ns, String name, String node, boolean hostNetwork, String... ips) {
    PodBuilder b = new PodBuilder().withNewMetadata().withName(name).withNamespace(ns).endMetadata()
        .withNewSpec().withNodeName(node).withHostNetwork(hostNetwork).endSpec()
        .withNewStatus().withPhase("Running").withPodIP(ips[0]).endStatus();
    if (ns.equals("egress-service-agent")) {
      b.editMetadata().addToLabels("app.kubernetes.io/name", "egress-service-agent").endMetadata();
    }
    for (String ip : ips) {
      b.editStatus().addNewPodIP().withIp(ip).endPodIP().endStatus();
    }
    client.pods().resource(b.build()).create();
  }

  /** kubectl asks discovery before any get; the CRUD mock server has none, so it answers the core group's. */
  static final class Discovery extends Dispatcher {
    private final Dispatcher crud;

    Discovery(Dispatcher crud) {
      this.crud = crud;
    }

    @Override
    public MockResponse dispatch(RecordedRequest request) {
      String path = request.getPath().split("\\?", 2)[0];
      String body = switch (path) {
        case "/api" -> "{\"kind\":\"APIVersions\",\"versions\":[\"v1\"],"
            + "\"serverAddressByClientCIDRs\":[{\"clientCIDR\":\"0.0.0.0/0\",\"serverAddress\":\"mock\"}]}";
        case "/apis" -> "{\"kind\":\"APIGroupList\",\"apiVersion\":\"v1\",\"groups\":[]}";
        case "/api/v1" -> "{\"kind\":\"APIResourceList\",\"groupVersion\":\"v1\",\"resources\":["
            + "{\"name\":\"pods\",\"singularName\":\"pod\",\"namespaced\":true,\"kind\":\"Pod\","
            + "\"verbs\":[\"get\",\"list\"],\"shortNames\":[\"po\"]}]}";
        default -> null;
      };
      return body == null ? crud.dispatch(request)
          : new MockResponse().setResponseCode(200).setHeader("Content-Type", "application/json").setBody(body);
    }
  }
}

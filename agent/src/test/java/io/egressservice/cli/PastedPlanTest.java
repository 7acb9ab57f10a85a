package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.model.ObjectRef;
import io.egressservice.plan.RouteSpec;
import io.egressservice.plan.RuleSpec;
import io.egressservice.plan.TableRef;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code plan -o text} is documented as copy-pasteable: pasted into a shell it must run the commands it shows and
 * nothing else, whatever the objects hold. Each plan is checked by {@code sh -n}, then run by {@code sh} with {@code
 * ip}, {@code nft} and {@code sysctl} replaced by a stub on PATH that records its arguments (and nft its script), so
 * the test sees every word each command got; {@code touch} is the real one, so an injected command leaves its file.
 */
class PastedPlanTest {
  @TempDir Path dir;

  /** One stubbed command as it ran: its name and arguments; for nft, the script it read. */
  record Call(List<String> argv, String stdin) {
    String command() {
      return argv.get(0);
    }

    List<String> args() {
      return argv.subList(1, argv.size());
    }
  }

  /** The result of pasting {@code script} into sh: its exit code, its stderr, and the stubbed commands it ran. */
  record Pasted(int exit, String err, List<Call> calls) {
    /** The word after {@code lookup} (rules) or {@code table} (throw routes) of every ip call that has one. */
    List<String> tableWords() {
      List<String> words = new ArrayList<>();
      for (Call c : calls) {
        List<String> a = c.args();
        for (int i = 0; c.command().equals("ip") && i + 1 < a.size(); i++) {
          if (a.get(i).equals("lookup") || a.get(i).equals("table")) {
            words.add(a.get(i + 1));
          }
        }
      }
      return words;
    }
  }

  Pasted paste(String script) throws IOException, InterruptedException {
    Path file = dir.resolve("plan.sh");
    Files.writeString(file, script);
    Process check = new ProcessBuilder("sh", "-n", file.toString()).redirectErrorStream(true).start();
    assertThat(check.waitFor(10, TimeUnit.SECONDS)).isTrue();
    assertThat(check.exitValue()).as("sh -n: %s", new String(check.getInputStream().readAllBytes(),
        StandardCharsets.UTF_8)).isZero();

    Path stubs = Files.createDirectories(dir.resolve("stubs"));
    Path log = Files.createDirectories(dir.resolve("calls"));
    for (String command : List.of("ip", "nft", "sysctl")) {
      Path stub = stubs.resolve(command);
      Files.writeString(stub, """
          #!/bin/sh
          f="$CALLS/$(date +%s%N).$$"
          printf '%s\\0' "$(basename "$0")" "$@" > "$f.argv"
          if [ "$(basename "$0")" = nft ]; then cat > "$f.stdin"; fi
          exit 0
          """);
      stub.toFile().setExecutable(true);
    }
    ProcessBuilder pb = new ProcessBuilder("sh", file.toString()).directory(dir.toFile());
    pb.environment().put("PATH", stubs + ":/usr/sbin:/usr/bin:/sbin:/bin");
    pb.environment().put("CALLS", log.toString());
    Process sh = pb.start();
    sh.getOutputStream().close();
    assertThat(sh.waitFor(30, TimeUnit.SECONDS)).isTrue();
    String err = new String(sh.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
    List<Call> calls = new ArrayList<>();
    try (Stream<Path> files = Files.list(log)) {
      for (Path argv : files.filter(f -> f.toString().endsWith(".argv")).sorted().toList()) {
        String raw = Files.readString(argv);
        Path stdin = Path.of(argv.toString().replace(".argv", ".stdin"));
        calls.add(new Call(Arrays.asList(raw.substring(0, raw.length() - 1).split("\0", -1)),
            Files.exists(stdin) ? Files.readString(stdin) : ""));
      }
    }
    return new Pasted(sh.exitValue(), err, calls);
  }

  Path objects(String namespace, String name, String networkYaml) throws IOException {
    Path f = dir.resolve("objects.yaml");
    Files.writeString(f, """
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: NAME, namespace: NS}
        spec: {sourceIPBy: LoadBalancerIP, network: NETWORK}
        status: {host: node-a}
        ---
        apiVersion: v1
        kind: Service
        metadata: {name: NAME, namespace: NS}
        spec: {type: LoadBalancer, clusterIP: 172.30.0.10, selector: {app: web}}
        status: {loadBalancer: {ingress: [{ip: 5.5.5.5}]}}
        ---
        apiVersion: discovery.k8s.io/v1
        kind: EndpointSlice
        metadata:
          name: NAME-1
          namespace: NS
          labels: {kubernetes.io/service-name: NAME, endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}
        addressType: IPv4
        endpoints: [{addresses: [10.128.0.5], nodeName: node-a, conditions: {ready: true}}]
        ---
        apiVersion: v1
        kind: Node
        metadata: {name: node-a}
        spec: {podCIDRs: [10.128.0.0/24]}
        status: {addresses: [{type: InternalIP, address: 192.168.1.10}]}
        """.replace("NAME", name).replace("NS", namespace).replace("NETWORK", networkYaml));
    return f;
  }

  String plan(Path objects) {
    InProcess.Result r = InProcess.run("plan", "--objects", objects.toString(), "--node", "node-a", "--service-cidr",
        "172.30.0.0/16");
    assertThat(r.exit()).as(r.err()).isZero();
    return r.out();
  }

  @Test
  void aNewlineInTheNetworkRunsNoCommandWhenThePlanIsPasted() throws Exception {
    Path pwned = dir.resolve("PWNED");
    String network = "evil\ntouch " + pwned + " #";
    String text = plan(objects("shop", "web", "\"" + network.replace("\n", "\\n") + "\""));

    Pasted pasted = paste(text);

    assertThat(pwned).as("the file the network's second line would touch").doesNotExist();
    assertThat(pasted.exit()).as(pasted.err()).isZero();
    assertThat(pasted.calls()).extracting(Call::command).doesNotContain("touch");
    // the planner refuses such a network (no rule, no route, no SNAT); the comment saying why shows it on one line
    assertThat(pasted.tableWords()).isEmpty();
    assertThat(text).doesNotContain("10.128.0.5 comment");
    assertThat(text.lines().filter(l -> l.contains("invalid spec.network"))).singleElement().asString()
        .startsWith("#").contains("evil\\ntouch " + pwned + " #");
  }

  @Test
  void anAnsiEscapeInTheNetworkIsShownAndCannotHideAnything() throws Exception {
    Path pwned = dir.resolve("PWNED");
    // ESC[8m conceals what follows on a terminal; without the escaping the ';' would also end the command
    String text = plan(objects("shop", "web", "\"blue\\e[8m; touch " + pwned + "\""));

    assertThat(text).doesNotContain("\u001b").contains("'blue\\x1b[8m; touch " + pwned + "'");
    Pasted pasted = paste(text);

    assertThat(pwned).doesNotExist();
    assertThat(pasted.exit()).as(pasted.err()).isZero();
    assertThat(pasted.tableWords()).isEmpty();
    assertThat(text.lines().filter(l -> l.contains("invalid spec.network"))).singleElement().asString()
        .startsWith("#").contains("blue\\x1b[8m; touch " + pwned);
  }

  @Test
  void aNetworkWithAQuoteIsOneWordThatMeansItself() throws Exception {
    Path pwned = dir.resolve("PWNED");
    String network = "it's'; touch " + pwned + "; '";
    String text = plan(objects("shop", "web", "\"" + network + "\""));

    Pasted pasted = paste(text);

    assertThat(pwned).doesNotExist();
    assertThat(pasted.exit()).as(pasted.err()).isZero();
    assertThat(pasted.tableWords()).isEmpty();
    assertThat(text.lines().filter(l -> l.contains("invalid spec.network"))).singleElement().asString()
        .startsWith("#").contains(network);
  }

  /**
   * The commands themselves, whatever the planner accepts: a rule and a throw route to a table named with a quote, a
   * newline and an ANSI escape, each one word.
   */
  @Test
  void ruleAndRouteCommandsPassATableNameAsOneWord() throws Exception {
    Path pwned = dir.resolve("PWNED");
    String hostile = "o'neil\n\u001b[2Ktouch " + pwned;
    TableRef table = TableRef.unresolved(hostile);
    RuleSpec rule = new RuleSpec(IpFamily.V4, 5000, Optional.of(IpPrefix.parseHost("10.128.0.5")), Optional.empty(),
        table, Optional.of(new ObjectRef("shop", "it's")));
    RouteSpec route = new RouteSpec(IpFamily.V4, table, IpPrefix.parse("10.128.0.0/14"));

    Pasted pasted = paste(PlanText.ruleCommand(rule, 201, 0) + "\n" + PlanText.routeCommand(route, 201) + "\n");

    assertThat(pwned).doesNotExist();
    String shown = "o'neil\\n\\x1b[2Ktouch " + pwned;
    assertThat(pasted.calls()).extracting(Call::args).containsExactly(
        List.of("-4", "rule", "add", "priority", "5000", "from", "10.128.0.5", "lookup", shown, "protocol", "201"),
        List.of("-4", "route", "add", "throw", "10.128.0.0/14", "table", shown, "protocol", "201"));
  }

  @Test
  void theJsonPlanCarriesTheNetworkExactlyWithNothingATerminalActsOn() throws Exception {
    String network = "evil\ntouch x #\u001b[8m\u009b\u202e";
    InProcess.Result r = InProcess.run("plan", "--objects",
        objects("shop", "web", "\"evil\\ntouch x #\\e[8m\\x9b\\u202e\"").toString(), "--node", "node-a", "-o", "json");
    assertThat(r.exit()).as(r.err()).isZero();

    assertThat(r.out()).doesNotContain("\u001b", "\u009b", "\u202e").contains("\\u001B", "\\u009b", "\\u202e");
    var services = new com.fasterxml.jackson.databind.ObjectMapper().readTree(r.out()).path("services");
    assertThat(services.findValuesAsText("reason")).singleElement().asString().contains(network);
  }

  @Test
  void anErrorQuotingAnObjectsNameIsOneLine() throws Exception {
    Path file = dir.resolve("bad-name.yaml");
    Files.writeString(file, """
        apiVersion: k8s.ovn.org/v1
        kind: EgressService
        metadata: {name: "we\\nerror: forged", namespace: shop}
        spec: {network: "100"}
        """);
    InProcess.Result r = InProcess.run("plan", "--objects", file.toString(), "--node", "node-a");

    assertThat(r.exit()).isEqualTo(Main.EXIT_USER_ERROR);
    assertThat(r.err().lines()).singleElement().asString().startsWith("error: ")
        .contains("metadata.name 'we\\nerror: forged' is not");
  }

  @Test
  void plainPlansAreUnchanged() {
    String text = plan(EXAMPLES_WEB);
    assertThat(text).contains("lookup 100 protocol 201  # default/web");
    assertThat(text.lines().filter(l -> l.startsWith("ip ") || l.contains("comment"))).noneMatch(l -> l.contains("'"));
  }

  static final Path EXAMPLES_WEB = Path.of("examples", "web.yaml");
}

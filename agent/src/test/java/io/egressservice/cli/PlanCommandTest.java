package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.dataformat.yaml.YAMLMapper;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.testing.Netns;
import io.egressservice.testing.Privileges;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.math.BigInteger;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import java.util.stream.StreamSupport;
import org.junit.jupiter.api.Nested;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

class PlanCommandTest {
  private static final ObjectMapper JSON = new ObjectMapper();
  private static final YAMLMapper YAML = new YAMLMapper();
  private static final Path EXAMPLES = Path.of("examples");
  private static final String[] EXAMPLE_ARGS = {
      "plan", "--objects", "examples", "--node", "node-a", "--service-cidr", "172.30.0.0/16"};

  /** One in-process run of the command line. */
  record Run(int exit, String out, String err) {
    JsonNode json() {
      try {
        return JSON.readTree(out);
      } catch (IOException e) {
        throw new AssertionError("not JSON: " + out, e);
      }
    }
  }

  static Run run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    CommandLine cl = Main.commandLine();
    cl.setOut(new PrintWriter(out, true));
    cl.setErr(new PrintWriter(err, true));
    int exit = cl.execute(args);
    return new Run(exit, out.toString(), err.toString());
  }

  static String[] with(String[] base, String... more) {
    return Stream.concat(Stream.of(base), Stream.of(more)).toArray(String[]::new);
  }

  static Run ok(String... args) {
    Run r = run(args);
    assertThat(r.exit()).as("exit code; stderr: %s", r.err()).isZero();
    return r;
  }

  /** OVN-Kubernetes' ETP=Local rule in the plan's text and JSON, and its flag's errors. */
  @Nested
  class OvnMasqueradeIps {
    @TempDir Path dir;

    Path objects() throws IOException {
      Path f = dir.resolve("etp.yaml");
      Files.writeString(f, """
          apiVersion: k8s.ovn.org/v1
          kind: EgressService
          metadata: {name: web, namespace: shop}
          spec: {sourceIPBy: Network, network: "100"}
          status: {host: ALL}
          ---
          apiVersion: v1
          kind: Service
          metadata: {name: web, namespace: shop}
          spec:
            type: LoadBalancer
            externalTrafficPolicy: Local
            clusterIPs: [172.30.0.10, "fd02::10"]
            ports: [{port: 80, nodePort: 30300, protocol: TCP}]
          status: {loadBalancer: {ingress: [{ip: 5.5.5.5}, {ip: "5555::5"}]}}
          """);
      return f;
    }

    @Test
    void theEtpLocalRuleIsInTheTextAndTheJsonWithItsSourcePort() throws IOException {
      String[] args = {"plan", "--objects", objects().toString(), "--node", "n1", "--ovn-masquerade-ips",
          "169.254.169.3,fd69::3"};
      assertThat(ok(args).out().lines()).contains(
          "ip -4 rule add priority 5000 from 169.254.169.3 sport 30300 lookup 100 protocol 201  # shop/web",
          "ip -6 rule add priority 5000 from fd69::3 sport 30300 lookup 100 protocol 201  # shop/web");
      JsonNode rules = ok(with(args, "-o", "json")).json().path("rules");
      assertThat(StreamSupport.stream(rules.spliterator(), false).filter(r -> r.has("sport"))
          .map(r -> r.path("from").asText() + " " + r.path("sport").asInt()).toList())
          .containsExactly("169.254.169.3 30300", "fd69::3 30300");
      assertThat(ok("plan", "--objects", objects().toString(), "--node", "n1").out()).doesNotContain("sport");
    }

    @Test
    void aPrefixOrTwoAddressesOfOneFamilyAreUserErrors() throws IOException {
      Run prefix = run("plan", "--objects", objects().toString(), "--node", "n1", "--ovn-masquerade-ips", "169.254.169.0/29");
      assertThat(prefix.exit()).isEqualTo(1);
      assertThat(prefix.err()).contains("masquerade IP must be an address");
      Run two = run("plan", "--objects", objects().toString(), "--node", "n1", "--ovn-masquerade-ips",
          "169.254.169.3,169.254.0.3");
      assertThat(two.exit()).isEqualTo(1);
      assertThat(two.err()).contains("at most one ETP=Local masquerade IP per family");
    }
  }

  @Nested
  class TextOutput {
    @Test
    void hasOneCommentLinePerServiceWithItsOutcome() {
      Run r = ok(EXAMPLE_ARGS);
      List<String> serviceLines = r.out().lines().filter(l -> l.matches("# [^ /]+/[^ :]+: .*")).toList();
      assertThat(serviceLines).hasSize(3);
      assertThat(serviceLines.get(0)).startsWith("# default/pending: not configured: ").contains("no LoadBalancer ingress");
      assertThat(serviceLines.get(1)).startsWith("# default/reports: configured: ").contains("table 101");
      assertThat(serviceLines.get(2)).startsWith("# default/web: configured: ").contains("5.5.5.5");
      assertThat(r.out()).contains("#   skipped 192.168.1.11: host-network endpoint");
    }

    @Test
    void hasIpRuleCommandsForSourcesAndThrowRoutesForInClusterDestinations() {
      String out = ok(EXAMPLE_ARGS).out();
      assertThat(out.lines()).contains(
          "ip -4 rule add priority 5000 from 10.128.0.5 lookup 100 protocol 201  # default/web",
          "ip -4 rule add priority 5000 from 10.128.0.20 lookup 101 protocol 201  # default/reports",
          "ip -6 rule add priority 5000 from fd01:0:0:1::5 lookup 100 protocol 201  # default/web",
          "ip -4 route add throw 172.30.0.0/16 table 100 protocol 201",
          "ip -4 route add throw 172.30.0.0/16 table 101 protocol 201",
          "ip -4 route add throw 192.168.1.10/31 table 101 protocol 201",
          "ip -6 route add throw fd01:0:0:1::/64 table 100 protocol 201");
      assertThat(out).doesNotContain("priority 4999");
    }

    @Test
    void hasOneIpCommandPerJsonRuleAndRoute() {
      List<String> ipLines = ok(EXAMPLE_ARGS).out().lines().filter(l -> l.startsWith("ip ")).toList();
      JsonNode json = ok(with(EXAMPLE_ARGS, "--output", "json")).json();
      assertThat(ipLines.stream().filter(l -> l.contains(" rule add "))).hasSize(json.path("rules").size()).hasSize(8);
      assertThat(ipLines.stream().filter(l -> l.contains(" route add throw "))).hasSize(json.path("routes").size())
          .hasSize(9);
      // the rest is the steering device (node-a receives node-b's steered endpoint)
      assertThat(ipLines.stream().filter(l -> !l.startsWith("ip link ") && !l.startsWith("ip addr "))).hasSize(17);
    }

    @Test
    void hasAnNftScriptForTheOwnedTable() {
      String out = ok(EXAMPLE_ARGS).out();
      assertThat(out).contains("nft -f - <<'NFT'\ntable inet egress_service_agent {\n")
          .contains("10.128.0.5 comment \"default/web\" : 5.5.5.5")
          .contains("fd01:0:0:1::5 comment \"default/web\" : 2001:db8:5::5")
          .contains("set in_cluster_v4 { type ipv4_addr; flags interval; auto-merge; elements = { "
              + "10.128.0.0/23, 172.30.0.0/16, 192.168.1.10/31 } }")
          .endsWith("}\nNFT\n");
    }

    @Test
    void priorityFlagMovesAllRules() {
      Run r = ok(with(EXAMPLE_ARGS, "--priority", "6000"));
      List<String> ipLines = r.out().lines().filter(l -> l.startsWith("ip ") && l.contains(" rule ")).toList();
      assertThat(ipLines).isNotEmpty().allMatch(l -> l.contains(" priority 6000 from "));
      Set<Integer> priorities = new TreeSet<>();
      ok(with(EXAMPLE_ARGS, "--priority", "6000", "-o", "json")).json().path("rules")
          .forEach(rule -> priorities.add(rule.path("priority").asInt()));
      assertThat(priorities).containsExactly(6000);
    }

    @Test
    void noInClusterExclusionDropsTheDestinationRulesAndSet() {
      JsonNode plan = ok(with(EXAMPLE_ARGS, "--no-in-cluster-exclusion", "-o", "json")).json();
      assertThat(plan.path("rules")).isNotEmpty().allMatch(rule -> rule.path("to").isNull());
      assertThat(plan.path("inCluster")).isEmpty();
      assertThat(plan.path("routes")).isEmpty();
    }

    /**
     * The text is copy-pasteable: run verbatim by a shell in a throwaway namespace, the kernel then
     * holds exactly the rules, SNAT entries and in-cluster set that the JSON plan says.
     */
    @Test
    void runsVerbatimInAShellAndTheKernelThenHoldsThePlan(@TempDir Path dir) throws IOException {
      Privileges.assumeNetAdmin();
      assumeThat(Files.isExecutable(Path.of("/usr/sbin/nft")) || Files.isExecutable(Path.of("/sbin/nft")))
          .as("needs the nft command").isTrue();
      Path script = dir.resolve("plan.sh");
      Files.writeString(script, ok(EXAMPLE_ARGS).out());
      JsonNode plan = ok(with(EXAMPLE_ARGS, "-o", "json")).json();

      try (Netns ns = Netns.create("plan")) {
        ns.exec("bash", "-e", script.toString());

        Set<String> kernelRules = new HashSet<>();
        for (String flag : List.of("-4", "-6")) {
          for (JsonNode rule : ns.json("ip", flag, "-j", "rule", "show")) {
            if (rule.path("protocol").asText().equals("201")) {
              kernelRules.add(kernelRule(flag.equals("-4") ? "inet" : "inet6", rule));
            }
          }
        }
        Set<String> planRules = new HashSet<>();
        plan.path("rules").forEach(rule -> planRules.add(String.join(" ", rule.path("family").asText(),
            rule.path("priority").asText(), text(rule.path("from")), text(rule.path("to")),
            rule.path("table").asText())));
        assertThat(kernelRules).hasSize(8).isEqualTo(planRules);

        Set<String> kernelRoutes = new HashSet<>();
        for (String flag : List.of("-4", "-6")) {
          for (JsonNode route : ns.json("ip", flag, "-j", "route", "show", "table", "all")) {
            if (route.path("protocol").asText().equals("201")) {
              kernelRoutes.add(String.join(" ", flag.equals("-4") ? "inet" : "inet6", route.path("type").asText(),
                  IpPrefix.parse(route.path("dst").asText()).toString(), route.path("table").asText()));
            }
          }
        }
        Set<String> planRoutes = new HashSet<>();
        plan.path("routes").forEach(route -> planRoutes.add(String.join(" ", route.path("family").asText(),
            route.path("type").asText(), route.path("to").asText(), route.path("table").asText())));
        assertThat(kernelRoutes).hasSize(9).isEqualTo(planRoutes);

        JsonNode nft = ns.json("nft", "-j", "list", "table", "inet", PlanText.NFT_TABLE).path("nftables");
        Set<String> kernelSnat = new HashSet<>();
        List<IpPrefix[]> kernelInCluster = new ArrayList<>();
        for (JsonNode n : nft) {
          if (n.has("map")) {
            String family = n.get("map").path("name").asText().endsWith("v4") ? "inet" : "inet6";
            for (JsonNode e : n.get("map").path("elem")) {
              JsonNode key = e.get(0).path("elem");
              kernelSnat.add(String.join(" ", family, key.path("val").asText(), e.get(1).asText(),
                  key.path("comment").asText()));
            }
          }
          if (n.has("set")) {
            for (JsonNode e : n.get("set").path("elem")) {
              kernelInCluster.add(interval(e));
            }
          }
        }
        Set<String> planSnat = new HashSet<>();
        plan.path("snat").forEach(e -> planSnat.add(String.join(" ", e.path("family").asText(),
            e.path("source").asText(), e.path("to").asText(), e.path("service").asText())));
        assertThat(kernelSnat).hasSize(4).isEqualTo(planSnat);

        // nft auto-merges adjacent prefixes into ranges, so compare the address ranges covered
        List<IpPrefix[]> planInCluster = new ArrayList<>();
        plan.path("inCluster").forEach(p -> {
          IpPrefix prefix = IpPrefix.parse(p.asText());
          planInCluster.add(new IpPrefix[] {prefix, prefix});
        });
        for (IpFamily family : IpFamily.values()) {
          assertThat(union(kernelInCluster, family)).as(family.toString()).isNotEmpty()
              .isEqualTo(union(planInCluster, family));
        }
      }
    }

    private static String text(JsonNode n) {
      return n.isNull() ? "-" : n.asText();
    }

    private static String kernelRule(String family, JsonNode rule) {
      String from = rule.path("src").asText();
      String to = rule.has("dst") ? prefix(rule.path("dst").asText(), rule.path("dstlen")) : "-";
      String table = switch (rule.path("table").asText()) {
        case "main" -> "254";
        case "local" -> "255";
        case "default" -> "253";
        default -> rule.path("table").asText();
      };
      return String.join(" ", family, rule.path("priority").asText(),
          from.equals("all") ? "-" : prefix(from, rule.path("srclen")), to, table);
    }

    private static String prefix(String address, JsonNode length) {
      return IpPrefix.parse(length.isMissingNode() ? address : address + "/" + length.asInt()).toString();
    }

    /** An nft interval-set element as [first, last]: a host, a prefix or a range. */
    private static IpPrefix[] interval(JsonNode e) {
      if (e.has("prefix")) {
        IpPrefix p = IpPrefix.parse(e.get("prefix").path("addr").asText() + "/" + e.get("prefix").path("len").asInt());
        return new IpPrefix[] {p, p};
      }
      if (e.has("range")) {
        return new IpPrefix[] {IpPrefix.parse(e.get("range").get(0).asText()), IpPrefix.parse(e.get("range").get(1).asText())};
      }
      IpPrefix p = IpPrefix.parse(e.asText());
      return new IpPrefix[] {p, p};
    }

    /** The covered addresses of one family as merged "first-last" ranges. */
    private static List<String> union(List<IpPrefix[]> intervals, IpFamily family) {
      List<BigInteger[]> ranges = intervals.stream().filter(i -> i[0].family() == family)
          .map(i -> new BigInteger[] {i[0].firstAddress(), i[1].lastAddress()})
          .sorted(Comparator.comparing((BigInteger[] r) -> r[0])).collect(Collectors.toCollection(ArrayList::new));
      List<BigInteger[]> merged = new ArrayList<>();
      for (BigInteger[] r : ranges) {
        BigInteger[] last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
        if (last != null && last[1].add(BigInteger.ONE).compareTo(r[0]) >= 0) {
          last[1] = last[1].max(r[1]);
        } else {
          merged.add(r.clone());
        }
      }
      return merged.stream().map(r -> r[0].toString(16) + "-" + r[1].toString(16)).toList();
    }
  }

  @Nested
  class JsonOutput {
    @Test
    void hasTheShapeOfDesignSection4() {
      JsonNode plan = ok(with(EXAMPLE_ARGS, "--output", "json")).json();
      assertThat(plan.path("node").asText()).isEqualTo("node-a");
      assertThat(plan.path("rules").isArray()).isTrue();
      assertThat(plan.path("snat").isArray()).isTrue();
      assertThat(plan.path("inCluster").isArray()).isTrue();
      assertThat(plan.path("services").isArray()).isTrue();
      for (JsonNode rule : plan.path("rules")) {
        assertThat(fieldNames(rule)).contains("family", "priority", "from", "to", "table", "service");
        assertThat(rule.path("family").asText()).isIn("inet", "inet6");
        assertThat(rule.path("priority").isInt()).isTrue();
        assertThat(rule.path("table").isIntegralNumber()).isTrue();
      }
      for (JsonNode e : plan.path("snat")) {
        assertThat(fieldNames(e)).contains("family", "source", "to", "service");
      }
      for (JsonNode s : plan.path("services")) {
        assertThat(fieldNames(s)).contains("service", "configured", "reason", "skippedEndpoints");
        assertThat(s.path("configured").isBoolean()).isTrue();
        for (JsonNode skipped : s.path("skippedEndpoints")) {
          assertThat(fieldNames(skipped)).contains("address", "reason");
        }
      }
    }

    @Test
    void sourceRulesCarryAnExplicitNullTo() {
      JsonNode plan = ok(with(EXAMPLE_ARGS, "--output", "json")).json();
      JsonNode webRule = StreamSupport.stream(plan.path("rules").spliterator(), false)
          .filter(r -> r.path("from").asText().equals("10.128.0.5")).findFirst().orElseThrow();
      assertThat(webRule.has("to")).isTrue();
      assertThat(webRule.get("to").isNull()).isTrue();
      assertThat(webRule.path("priority").asInt()).isEqualTo(5000);
      assertThat(webRule.path("table").asInt()).isEqualTo(100);
      assertThat(webRule.path("service").asText()).isEqualTo("default/web");
      JsonNode inCluster = plan.path("routes").get(0);
      assertThat(inCluster.path("family").asText()).isEqualTo("inet");
      assertThat(inCluster.path("type").asText()).isEqualTo("throw");
      assertThat(inCluster.path("to").asText()).isEqualTo("10.128.0.0/23");
      assertThat(inCluster.path("table").asInt()).isEqualTo(100);
    }

    @Test
    void describesTheExamples() {
      JsonNode plan = ok(with(EXAMPLE_ARGS, "--output", "json")).json();
      assertThat(rows(plan.path("rules"), "family", "priority", "from", "to", "table", "service")).containsExactly(
          "inet 5000 10.128.0.5 null 100 default/web",
          "inet 5000 10.128.0.9 null 100 default/web",
          "inet 5000 10.128.0.20 null 101 default/reports",
          "inet 5000 10.128.1.7 null 100 default/web",
          "inet 5000 172.30.0.10 null 100 default/web",
          "inet 5000 172.30.0.20 null 101 default/reports",
          "inet6 5000 fd01:0:0:1::5 null 100 default/web",
          "inet6 5000 fd02::10 null 100 default/web");
      assertThat(rows(plan.path("routes"), "family", "type", "to", "table")).containsExactly(
          "inet throw 10.128.0.0/23 100", "inet throw 172.30.0.0/16 100", "inet throw 192.168.1.10/31 100",
          "inet throw 10.128.0.0/23 101", "inet throw 172.30.0.0/16 101", "inet throw 192.168.1.10/31 101",
          "inet6 throw 2001:db8:1::10/127 100", "inet6 throw fd01:0:0:1::/64 100", "inet6 throw fd01:0:0:2::/64 100");
      assertThat(rows(plan.path("snat"), "family", "source", "to", "service")).containsExactly(
          "inet 10.128.0.5 5.5.5.5 default/web",
          "inet 10.128.0.9 5.5.5.5 default/web",
          "inet 10.128.1.7 5.5.5.5 default/web",
          "inet6 fd01:0:0:1::5 2001:db8:5::5 default/web");
      assertThat(plan.path("inCluster")).extracting(JsonNode::asText).containsExactly(
          "10.128.0.0/23", "172.30.0.0/16", "192.168.1.10/31", "2001:db8:1::10/127", "fd01:0:0:1::/64",
          "fd01:0:0:2::/64");
      assertThat(rows(plan.path("services"), "service", "configured")).containsExactly(
          "default/pending false", "default/reports true", "default/web true");
      assertThat(rows(plan.path("services").get(1).path("skippedEndpoints"), "address"))
          .containsExactly("192.168.1.11");
    }

    @Test
    void rulesAndSnatAreSortedByFamilyPriorityFromTo() {
      JsonNode plan = ok(with(EXAMPLE_ARGS, "--output", "json")).json();
      Comparator<JsonNode> ruleOrder = Comparator.<JsonNode, String>comparing(r -> r.path("family").asText())
          .thenComparingInt(r -> r.path("priority").asInt())
          .thenComparing(r -> address(r.path("from")), Comparator.nullsFirst(Comparator.naturalOrder()))
          .thenComparing(r -> address(r.path("to")), Comparator.nullsFirst(Comparator.naturalOrder()));
      assertThat(list(plan.path("rules"))).isSortedAccordingTo(ruleOrder);
      Comparator<JsonNode> snatOrder = Comparator.<JsonNode, String>comparing(r -> r.path("family").asText())
          .thenComparing(r -> address(r.path("source")));
      assertThat(list(plan.path("snat"))).isSortedAccordingTo(snatOrder);
      assertThat(list(plan.path("services"))).extracting(s -> s.path("service").asText()).isSorted();
    }

    @Test
    void isStableAcrossRuns() {
      String first = ok(with(EXAMPLE_ARGS, "--output", "json")).out();
      String second = ok(with(EXAMPLE_ARGS, "--output", "json")).out();
      assertThat(second).isEqualTo(first);
    }

    @Test
    void isIndependentOfInputFileOrder() {
      String[] forward = {"plan", "--node", "node-a", "--service-cidr", "172.30.0.0/16", "-o", "json", "--objects",
          "examples/nodes.yaml", "examples/pending.yaml", "examples/reports.yaml", "examples/web.yaml"};
      String[] backward = {"plan", "--node", "node-a", "--service-cidr", "172.30.0.0/16", "-o", "json", "--objects",
          "examples/web.yaml", "examples/reports.yaml", "examples/pending.yaml", "examples/nodes.yaml"};
      String expected = ok(with(EXAMPLE_ARGS, "--output", "json")).out();
      assertThat(ok(forward).out()).isEqualTo(expected);
      assertThat(ok(backward).out()).isEqualTo(expected);
    }

    private static IpPrefix address(JsonNode n) {
      return n.isNull() ? null : IpPrefix.parse(n.asText());
    }

    private static List<JsonNode> list(JsonNode array) {
      List<JsonNode> out = new ArrayList<>();
      array.forEach(out::add);
      return out;
    }

    private static List<String> fieldNames(JsonNode n) {
      List<String> out = new ArrayList<>();
      n.fieldNames().forEachRemaining(out::add);
      return out;
    }

    private static List<String> rows(JsonNode array, String... fields) {
      return list(array).stream()
          .map(o -> Stream.of(fields).map(f -> o.get(f).isNull() ? "null" : o.get(f).asText())
              .collect(Collectors.joining(" ")))
          .toList();
    }
  }

  @Nested
  class Inputs {
    @TempDir Path dir;

    private String examplesJson() {
      return ok(with(EXAMPLE_ARGS, "-o", "json")).out();
    }

    private String planJson(String... objects) {
      return ok(with(new String[] {"plan", "--node", "node-a", "--service-cidr", "172.30.0.0/16", "-o", "json",
          "--objects"}, objects)).out();
    }

    /** Every example object, each as a tree (the nodes List flattened). */
    private List<JsonNode> exampleObjects() throws IOException {
      List<JsonNode> out = new ArrayList<>();
      try (Stream<Path> files = Files.list(EXAMPLES)) {
        for (Path f : files.sorted().toList()) {
          for (JsonNode doc : YAML.readerFor(JsonNode.class).<JsonNode>readValues(Files.readString(f)).readAll()) {
            if (doc.path("kind").asText().equals("List")) {
              doc.path("items").forEach(out::add);
            } else {
              out.add(doc);
            }
          }
        }
      }
      assertThat(out).hasSize(11);
      return out;
    }

    @Test
    void multiDocumentYamlFileGivesTheSamePlanAsTheExamplesDirectory() throws IOException {
      StringBuilder yaml = new StringBuilder();
      for (JsonNode o : exampleObjects()) {
        yaml.append(YAML.writeValueAsString(o)); // each starts with "---"
      }
      Path file = Files.writeString(dir.resolve("all.yaml"), yaml);
      assertThat(planJson(file.toString())).isEqualTo(examplesJson());
    }

    @Test
    void jsonListFileGivesTheSamePlan() throws IOException {
      ArrayNode items = JSON.createArrayNode();
      exampleObjects().forEach(items::add);
      var list = JSON.createObjectNode().put("apiVersion", "v1").put("kind", "List");
      list.set("items", items);
      Path file = Files.writeString(dir.resolve("all.json"), JSON.writeValueAsString(list));
      assertThat(planJson(file.toString())).isEqualTo(examplesJson());
    }

    @Test
    void directoryOfSingleObjectFilesAndSubdirectoriesGivesTheSamePlan() throws IOException {
      Files.createDirectories(dir.resolve("sub/deeper"));
      int i = 0;
      for (JsonNode o : exampleObjects()) {
        i++;
        Path file = switch (i % 3) {
          case 0 -> dir.resolve("o" + i + ".json");
          case 1 -> dir.resolve("sub/o" + i + ".yml");
          default -> dir.resolve("sub/deeper/o" + i + ".yaml");
        };
        Files.writeString(file, i % 3 == 0 ? JSON.writeValueAsString(o) : YAML.writeValueAsString(o));
      }
      Files.writeString(dir.resolve("README.md"), "not an object file: ignored\n");
      assertThat(planJson(dir.toString())).isEqualTo(examplesJson());
    }

    @Test
    void aNodeWithAWholeFamilyPodCidrIsReportedInTextAndJsonAndChangesNoInClusterSet() throws IOException {
      Path file = Files.writeString(dir.resolve("bad-node.yaml"), """
          apiVersion: v1
          kind: Node
          metadata: {name: node-z}
          spec: {podCIDRs: [0.0.0.0/0]}
          status: {addresses: [{type: InternalIP, address: 192.168.1.99}]}
          """);
      String[] args = {"plan", "--node", "node-a", "--service-cidr", "172.30.0.0/16", "--objects", "examples",
          file.toString()};
      JsonNode plan = ok(with(args, "-o", "json")).json();
      assertThat(plan.path("refusedInputs")).extracting(JsonNode::asText).containsExactly(
          "Node node-z pod CIDR 0.0.0.0/0 covers every IPv4 address: ignored (as an in-cluster destination it would"
              + " exempt all egress from every service)");
      assertThat(plan.path("inCluster")).extracting(JsonNode::asText).contains("10.128.0.0/23", "192.168.1.99")
          .doesNotContain("0.0.0.0/0");
      assertThat(ok(args).out()).contains("# refused input: Node node-z pod CIDR 0.0.0.0/0 covers every IPv4 address");
      assertThat(plan.path("services")).anySatisfy(svc -> {
        assertThat(svc.path("service").asText()).isEqualTo("default/web");
        assertThat(svc.path("configured").asBoolean()).isTrue();
      });
    }

    @Test
    void unknownKindIsSkippedWithANoteNamingFileAndObject() throws IOException {
      Path file = Files.writeString(dir.resolve("extra.yaml"), """
          apiVersion: v1
          kind: ConfigMap
          metadata: {name: settings, namespace: kube-system}
          data: {a: b}
          """);
      Run r = ok("plan", "--node", "node-a", "--service-cidr", "172.30.0.0/16", "-o", "json",
          "--objects", "examples", file.toString());
      assertThat(r.err()).contains(file.toString()).contains("ConfigMap kube-system/settings").contains("skipping");
      assertThat(r.out()).isEqualTo(examplesJson());
    }

    @Test
    void nodeAddressWithoutAnAddressDoesNotCrashThePlan() throws IOException {
      Path file = Files.writeString(dir.resolve("node.yaml"), """
          apiVersion: v1
          kind: Node
          metadata: {name: node-c}
          spec: {podCIDRs: [10.128.2.0/24]}
          status: {addresses: [{type: InternalIP}, {type: InternalIP, address: 192.168.1.12}]}
          """);
      Run r = ok("plan", "--node", "node-c", "-o", "json", "--objects", file.toString());
      assertThat(r.err()).doesNotContain("internal error");
      assertThat(r.json().path("inCluster")).extracting(JsonNode::asText)
          .containsExactly("10.128.2.0/24", "192.168.1.12");
    }
  }

  @Nested
  class BadInput {
    @TempDir Path dir;

    private Run fails(String... args) {
      Run r = run(args);
      assertThat(r.exit()).as("exit code; stderr: %s", r.err()).isEqualTo(Main.EXIT_USER_ERROR);
      assertThat(r.out()).isEmpty();
      assertThat(r.err()).startsWith("error: ")
          .doesNotContain("\tat ").doesNotContain("Exception").doesNotContain("internal error");
      return r;
    }

    private Run failsOnObjects(String yaml, String... more) throws IOException {
      Path file = Files.writeString(dir.resolve("bad.yaml"), yaml);
      Run r = fails(with(new String[] {"plan", "--node", "node-a", "--objects", "examples", file.toString()}, more));
      assertThat(r.err()).contains(file.toString());
      return r;
    }

    @Test
    void missingFile() {
      Path missing = dir.resolve("nope.yaml");
      assertThat(fails("plan", "--node", "node-a", "--objects", missing.toString()).err())
          .contains(missing.toString()).contains("no such file");
    }

    @Test
    void invalidYaml() throws IOException {
      assertThat(failsOnObjects("kind: [Service\nmetadata: {\n").err()).contains("not valid YAML or JSON");
    }

    /** As kubectl, an editor or a compiler says it: FILE:LINE:COLUMN, the line and column of the problem itself. */
    @Test
    void aYamlSyntaxErrorNamesItsFileLineAndColumn() throws IOException {
      Run r = failsOnObjects("apiVersion: v1\nkind: Service\nmetadata:\n  name: web\n   namespace: shop\n");
      assertThat(r.err()).contains(dir.resolve("bad.yaml") + ":5:13: not valid YAML or JSON: mapping values are not"
          + " allowed here");
    }

    @Test
    void unknownSourceIpByListsTheAllowedValues() throws IOException {
      assertThat(failsOnObjects("""
          apiVersion: k8s.ovn.org/v1
          kind: EgressService
          metadata: {name: web, namespace: shop}
          spec: {sourceIPBy: Foo}
          """).err())
          .contains("EgressService shop/web").contains("sourceIPBy").contains("Foo")
          .contains("LoadBalancerIP").contains("Network");
    }

    @Test
    void objectWithoutName() throws IOException {
      assertThat(failsOnObjects("""
          apiVersion: v1
          kind: Service
          metadata: {namespace: shop}
          """).err()).contains("Service shop/").contains("metadata.name is required");
    }

    @Test
    void wrongApiVersion() throws IOException {
      assertThat(failsOnObjects("""
          apiVersion: k8s.ovn.org/v2
          kind: EgressService
          metadata: {name: web, namespace: shop}
          """).err()).contains("EgressService shop/web").contains("k8s.ovn.org/v2").contains("expected k8s.ovn.org/v1");
    }

    @Test
    void scalarDocument() throws IOException {
      assertThat(failsOnObjects("""
          apiVersion: v1
          kind: Node
          metadata: {name: extra}
          ---
          just a string
          """).err()).contains("document 2").contains("not an object");
    }

    @Test
    void badItemOfAListIsNamedByItsPosition() throws IOException {
      assertThat(failsOnObjects("""
          apiVersion: v1
          kind: List
          items:
            - {apiVersion: v1, kind: Node, metadata: {name: n1}}
            - {apiVersion: v2, kind: Node, metadata: {name: n2}}
          """).err()).contains("Node n2").contains("document 1 item 2").contains("apiVersion");
    }

    @Test
    void badObjectInADirectoryNamesItsFile() throws IOException {
      Files.writeString(dir.resolve("a.yaml"), "apiVersion: v1\nkind: Node\nmetadata: {name: fine}\n");
      Path bad = Files.writeString(dir.resolve("b.yaml"), "apiVersion: v1\nkind: Node\nmetadata: {}\n");
      assertThat(fails("plan", "--node", "node-a", "--objects", dir.toString()).err())
          .contains(bad.toString()).contains("metadata.name is required");
    }

    @Test
    void unknownOutputFormat() {
      assertThat(fails(with(EXAMPLE_ARGS, "--output", "xml")).err()).contains("--output").contains("xml");
    }

    @Test
    void priorityBelowTwo() {
      assertThat(fails(with(EXAMPLE_ARGS, "--priority", "1")).err()).contains("priority").contains("not 1");
    }

    @Test
    void priorityNotANumber() {
      assertThat(fails(with(EXAMPLE_ARGS, "--priority", "high")).err()).contains("--priority").contains("high");
    }

    @Test
    void invalidClusterCidr() {
      assertThat(fails(with(EXAMPLE_ARGS, "--cluster-cidr", "10.0.0.300/8")).err())
          .contains("--cluster-cidr").contains("10.0.0.300/8");
    }

    @Test
    void anUnknownRuleModeIsRefused() {
      assertThat(fails(with(EXAMPLE_ARGS, "--rule-mode", "marks")).err())
          .contains("--rule-mode must be source or mark, not 'marks'");
    }

    @Test
    void aMarkMaskThatIsNotContiguousIsRefused() {
      assertThat(fails(with(EXAMPLE_ARGS, "--rule-mode", "mark", "--mark-mask", "0x0f0f0000")).err())
          .contains("--mark-mask must be contiguous bits");
    }

    @Test
    void missingNodeIsAUsageError() {
      assertThat(fails("plan", "--objects", "examples").err()).contains("--node");
    }

    @Test
    void unknownFlagIsAUsageError() {
      assertThat(fails(with(EXAMPLE_ARGS, "--frobnicate")).err()).contains("--frobnicate");
    }
  }
}

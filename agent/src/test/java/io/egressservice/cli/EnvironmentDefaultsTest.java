package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.OptionSpec;

/**
 * The flags' defaults from the environment, which is how the chart and deploy/ configure the agent and the allocator:
 * every variable they set reaches its flag as the flag itself would, the names are those the flags have always read,
 * and flags without a variable ignore the environment.
 */
class EnvironmentDefaultsTest {
  /** What each variable sets, as {@code man}'s ENVIRONMENT says it: flag (commands). */
  private static final Map<String, String> VARIABLES = new TreeMap<>(Map.ofEntries(
      Map.entry("EGRESS_AGENT_ALLOCATOR", "--allocator (run)"),
      Map.entry("EGRESS_AGENT_API_WATCH_IDLE_TIMEOUT", "--api-watch-idle-timeout (allocator, run)"),
      Map.entry("EGRESS_AGENT_CLUSTER_CIDR", "--cluster-cidr (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_EGRESS_SERVICE_POLICY", "--egress-service-policy (allocator, apply, plan, run)"),
      Map.entry("EGRESS_AGENT_EXCLUDE_CIDR", "--exclude-cidr (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_HOST_AGENT_DOWN_GRACE", "--host-agent-down-grace (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBES", "--host-probes (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBE_CANDIDATES", "--host-probe-candidates (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBE_FAILURES", "--host-probe-failures (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBE_INTERVAL", "--host-probe-interval (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBE_NETNS", "--host-probe-netns (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBE_PORT", "--host-probe-port (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBE_PROOFS", "--host-probe-proofs (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_PROBE_TIMEOUT", "--host-probe-timeout (allocator, run)"),
      Map.entry("EGRESS_AGENT_HOST_RECOVER_AFTER", "--host-recover-after (allocator, run)"),
      Map.entry("EGRESS_AGENT_KUBECONFIG", "--kubeconfig (allocator, explain, run, status)"),
      Map.entry("EGRESS_AGENT_LEASE_DURATION", "--lease-duration (allocator, run)"),
      Map.entry("EGRESS_AGENT_LEASE_RENEW_DEADLINE", "--lease-renew-deadline (allocator, run)"),
      Map.entry("EGRESS_AGENT_LEASE_RETRY_PERIOD", "--lease-retry-period (allocator, run)"),
      Map.entry("EGRESS_AGENT_MARK_MASK", "--mark-mask (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_MARK_NETWORKS_PER_NAMESPACE", "--mark-networks-per-namespace (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_METRICS_BIND_ADDRESS", "--metrics-bind-address (run)"),
      Map.entry("EGRESS_AGENT_METRICS_PORT", "--metrics-port (allocator, run)"),
      Map.entry("EGRESS_AGENT_NETNS", "--netns (apply, cleanup, explain, run, status)"),
      Map.entry("EGRESS_AGENT_NETNS_METRICS_PORT", "--netns-metrics-port (run)"),
      Map.entry("EGRESS_AGENT_NODE_NAME", "--node-name (apply, explain, run, status)"),
      Map.entry("EGRESS_AGENT_NO_HOST", "--no-host (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_NO_IN_CLUSTER_EXCLUSION", "--no-in-cluster-exclusion (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_OVN_MASQUERADE_IPS", "--ovn-masquerade-ips (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_OWNER", "--owner (allocator, run)"),
      Map.entry("EGRESS_AGENT_POD_NAME", "--pod-name (allocator, run)"),
      Map.entry("EGRESS_AGENT_POD_NAMESPACE", "--lease-namespace (allocator, run), --owner-namespace (allocator, run)"),
      Map.entry("EGRESS_AGENT_POD_UID", "--pod-uid (run)"),
      Map.entry("EGRESS_AGENT_PRIORITY", "--priority (apply, cleanup, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_PROBE_KEY_FILE", "--probe-key-file (allocator, run)"),
      Map.entry("EGRESS_AGENT_REMOTE_ENDPOINTS", "--remote-endpoints (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_RESYNC", "--resync (run)"),
      Map.entry("EGRESS_AGENT_RULE_MODE", "--rule-mode (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_RULE_PROTOCOL", "--rule-protocol (apply, cleanup, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_SERVICE_CIDR", "--service-cidr (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_STEER_PORT", "--steer-port (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_STEER_TABLE", "--steer-table (apply, explain, plan, run, status)"),
      Map.entry("EGRESS_AGENT_TRUSTED_ENDPOINT_MANAGERS", "--trusted-endpoint-managers (allocator, apply, explain, plan, run, status)")));

  /** Variables the deployments set that no flag reads: the image's launcher's and the logging's. */
  private static final List<String> NOT_FLAGS =
      List.of("EGRESS_AGENT_JVM_OPTIONS", "EGRESS_AGENT_LOG_FORMAT", "EGRESS_AGENT_LOG_LEVEL");

  private static final Pattern ENV_NAME = Pattern.compile("name[:=] *\"?(EGRESS_AGENT_[A-Z0-9_]+)");

  @Test
  void eachFlagReadsTheVariableItAlwaysRead() {
    Map<String, String> found = new TreeMap<>();
    CommandLine main = Main.commandLine(name -> null);
    Map<String, Map<String, TreeSet<String>>> byVariable = new TreeMap<>();
    main.getSubcommands().forEach((command, sub) -> sub.getCommandSpec().options().forEach(option ->
        EnvironmentDefaults.variable(option).ifPresent(variable -> byVariable
            .computeIfAbsent(variable, v -> new TreeMap<>())
            .computeIfAbsent(option.longestName(), f -> new TreeSet<>()).add(command))));
    byVariable.forEach((variable, flags) -> {
      List<String> uses = new ArrayList<>();
      flags.forEach((flag, commands) -> uses.add(flag + " (" + String.join(", ", commands) + ")"));
      found.put(variable, String.join(", ", uses));
    });
    assertThat(found).isEqualTo(VARIABLES);

    CommandLine asWritten = Main.commandLine(name -> null);
    asWritten.setInterpolateVariables(false);
    asWritten.getSubcommands().forEach((command, sub) -> sub.getCommandSpec().options().forEach(option ->
        assertThat(String.valueOf(option.defaultValue())).as("%s %s: its variable comes from @FromEnvironment", command,
            option.longestName()).doesNotContain("${env:")));
  }

  @Test
  void everyVariableTheChartAndDeploySetReachesItsFlagAsTheFlagWould() throws IOException {
    TreeSet<String> set = variablesSetBy(Path.of("charts/egress-service-agent"), Path.of("deploy"));
    assertThat(set).contains("EGRESS_AGENT_NODE_NAME", "EGRESS_AGENT_POD_NAMESPACE",
        "EGRESS_AGENT_TRUSTED_ENDPOINT_MANAGERS", "EGRESS_AGENT_LEASE_DURATION");
    set.removeAll(NOT_FLAGS);
    Map<String, String> environment = new HashMap<>();
    CommandLine main = Main.commandLine(environment::get);
    for (String variable : set) {
      int reached = 0;
      for (String command : List.of("run", "allocator")) {
        for (OptionSpec option : main.getSubcommands().get(command).getCommandSpec().options()) {
          if (EnvironmentDefaults.variable(option).filter(variable::equals).isPresent()) {
            assertReachesFlag(main, environment, command, option, variable);
            reached++;
          }
        }
      }
      assertThat(reached).as("flags of run or allocator that %s sets", variable).isPositive();
    }
  }

  /** {@code VARIABLE=value command} parses as {@code command --flag value}, and unlike {@code command} alone. */
  private static void assertReachesFlag(CommandLine main, Map<String, String> environment, String command,
      OptionSpec option, String variable) {
    String flag = option.longestName();
    String value = sample(option);
    List<String> base = new ArrayList<>(List.of(command));
    if (command.equals("run") && !flag.equals("--node-name")) {
      base.addAll(List.of("--node-name", "node-a"));
    }
    environment.clear();
    environment.put(variable, value);
    Object fromVariable = parsed(main, base, flag);
    environment.clear();
    List<String> withFlag = new ArrayList<>(base);
    withFlag.add(flag);
    if (option.arity().max() > 0) {
      withFlag.add(value);
    }
    Object fromFlag = parsed(main, withFlag, flag);
    Object unset = parsed(main, flag.equals("--node-name") ? List.of(command, "--node-name", "other") : base, flag);
    assertThat(fromVariable).as("%s=%s %s", variable, value, command).isEqualTo(fromFlag).isNotEqualTo(unset);
  }

  private static Object parsed(CommandLine main, List<String> args, String flag) {
    Object value = main.parseArgs(args.toArray(String[]::new)).subcommand().commandSpec().findOption(flag).getValue();
    return value instanceof List<?> list ? List.copyOf(list) : value;
  }

  /** A value of the flag's type that is not its default. */
  private static String sample(OptionSpec option) {
    Class<?> type = option.type();
    if (type == boolean.class || type == Boolean.class) {
      return option.arity().max() == 0 ? "true" : String.valueOf(!Boolean.parseBoolean(option.defaultValue()));
    }
    if (type == int.class || type == long.class) {
      return "4242";
    }
    if (type == java.time.Duration.class) {
      return "7s";
    }
    if (type == Path.class) {
      return "/run/egress-test/file";
    }
    return option.isMultiValue() ? "10.99.0.0/16,10.98.0.0/16" : "sample-" + Objects.hashCode(option.longestName());
  }

  private static TreeSet<String> variablesSetBy(Path... roots) throws IOException {
    TreeSet<String> names = new TreeSet<>();
    for (Path root : roots) {
      try (Stream<Path> files = Files.walk(root)) {
        for (Path f : files.filter(p -> p.toString().endsWith(".yaml") || p.toString().endsWith(".tpl")).toList()) {
          Matcher m = ENV_NAME.matcher(Files.readString(f));
          while (m.find()) {
            names.add(m.group(1));
          }
        }
      }
    }
    return names;
  }

  @Test
  void flagsWithoutAVariableIgnoreTheEnvironment() {
    Map<String, String> environment = Map.of("EGRESS_AGENT_NODE_NAME", "node-a", "EGRESS_AGENT_OUTPUT", "json",
        "EGRESS_AGENT_OBJECTS", "objects.yaml");
    CommandLine main = Main.commandLine(environment::get);
    CommandLine.ParseResult parsed = main.parseArgs("status");
    assertThat((Object) parsed.subcommand().commandSpec().findOption("--output").getValue()).isEqualTo("text");
    assertThat((Object) parsed.subcommand().commandSpec().findOption("--node-name").getValue()).isEqualTo("node-a");
    CommandLine again = Main.commandLine(environment::get);
    assertThat(again.execute("plan")).as("plan takes neither --node-name nor --objects from the environment")
        .isEqualTo(Main.EXIT_USER_ERROR);
  }

  @Test
  void helpShowsTheDefaultThatApplies() {
    assertThat(usage(Map.of(), "run")).contains("(default 9464; 0 picks a free port)")
        .contains("Default source.");
    assertThat(usage(Map.of("EGRESS_AGENT_METRICS_PORT", "9500", "EGRESS_AGENT_RULE_MODE", "mark"), "run"))
        .contains("(default 9500; 0 picks a free port)").contains("Default mark.");
  }

  private static String usage(Map<String, String> environment, String command) {
    CommandLine main = Main.commandLine(environment::get);
    StringWriter out = new StringWriter();
    main.getSubcommands().get(command).usage(new PrintWriter(out), CommandLine.Help.Ansi.OFF);
    return out.toString().replaceAll("\\s+", " ");
  }
}

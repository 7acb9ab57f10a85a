package io.egressservice.cli;

import io.egressservice.kernel.linux.LinuxKernel;
import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.Differ;
import io.egressservice.ip.IpFamily;
import io.egressservice.ip.IpPrefix;
import io.egressservice.netlink.RtNetlink;
import io.egressservice.objects.ObjectFiles;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.PlanConfig;
import io.egressservice.testing.Netns;
import io.egressservice.testing.NetnsFixture;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.io.TempDir;

/** {@code apply}, {@code status} and {@code cleanup} as a user runs them, against a throwaway namespace. */
class ApplyCommandNetnsTest {
  @RegisterExtension
  final NetnsFixture kernel = new NetnsFixture("cli");
  Netns ns;
  @TempDir Path tmp;

  @BeforeEach
  void setUp() {
    ns = kernel.ns();
  }

  static InProcess.Result run(String... args) {
    return InProcess.run(args);
  }

  @Test
  void dryRunShowsTheDifferencePerServiceAndChangesNothing() {
    InProcess.Result dry = run("apply", "--objects", "examples", "--node", "node-a", "--netns", ns.name(), "--dry-run");

    assertThat(dry.exit()).isZero();
    assertThat(dry.out()).contains("nothing was changed")
        .contains("default/web: configured")
        .contains("+ rule 5000: from 10.128.0.5 lookup 100 proto 201")
        .contains("+ snat 10.128.0.5 -> 5.5.5.5")
        .contains("default/pending: not configured: the Service has no LoadBalancer ingress IP yet");
    assertThat(ns.exec("ip", "rule", "show")).doesNotContain("proto 201");
  }

  @Test
  void applyThenReapplyThenStatusThenCleanup() {
    InProcess.Result first = run("apply", "--objects", "examples", "--node", "node-a", "--netns", ns.name());
    assertThat(first.exit()).isZero();
    assertThat(first.out()).containsPattern("applied \\d+ change\\(s\\) for node node-a in netns " + ns.name()
        + " \\(kernel time [0-9.]+ ms\\)");

    InProcess.Result again = run("apply", "--objects", "examples", "--node", "node-a", "--netns", ns.name());
    assertThat(again.out()).startsWith("applied 0 change(s)");

    InProcess.Result status = run("status", "--netns", ns.name());
    assertThat(status.exit()).isZero();
    assertThat(status.out()).contains("default/web\n  rule 5000: from 10.128.0.5 lookup 100 proto 201")
        .contains("  snat 10.128.0.5 -> 5.5.5.5")
        .contains("and 7 throw route(s) with protocol 201")
        .contains("in-cluster destinations thrown back from the service tables:\n  route throw 10.128.0.0/23 table 100"
            + " proto 201\n");
    InProcess.Result named = run("status", "--netns", ns.name(), "--objects", "examples", "--node", "node-a", "-o", "json");
    assertThat(named.out()).contains("\"service\" : \"default/reports\"").doesNotContain("service unknown");
    assertThat(json(named.out()).path("routes")).hasSize(7).anySatisfy(r -> assertThat(r.toString())
        .isEqualTo("{\"family\":\"inet6\",\"type\":\"throw\",\"to\":\"fd01:0:0:1::/64\",\"table\":100}"));

    InProcess.Result cleanup = run("cleanup", "--netns", ns.name());
    assertThat(cleanup.exit()).isZero();
    assertThat(ns.exec("ip", "rule", "show")).doesNotContain("proto 201");
    assertThat(ns.exec("ip", "route", "show", "table", "all")).doesNotContain("proto 201");
    assertThat(ns.exec("ip", "-6", "route", "show", "table", "all")).doesNotContain("proto 201");
    assertThat(ns.tryExec("nft", "list", "table", "inet", "egress_service_agent").exitCode()).isNotZero();
  }

  static com.fasterxml.jackson.databind.JsonNode json(String text) {
    try {
      return new com.fasterxml.jackson.databind.ObjectMapper().readTree(text);
    } catch (java.io.IOException e) {
      throw new IllegalArgumentException(text, e);
    }
  }

  @Test
  void aMissingNamespaceIsASystemErrorWithExitTwo() {
    InProcess.Result r = run("apply", "--objects", "examples", "--node", "node-a", "--netns", "esa-does-not-exist");

    assertThat(r.exit()).isEqualTo(2);
    assertThat(r.err()).contains("no such network namespace 'esa-does-not-exist'");
    assertThat(run("status", "--netns", "esa-does-not-exist").exit()).isEqualTo(2);
    assertThat(run("cleanup", "--netns", "esa-does-not-exist").exit()).isEqualTo(2);
  }

  @Test
  void killedInTheMiddleOfALargeApplyTheNextApplyEndsExactlyAtThePlan() throws Exception {
    int endpoints = 20_000;
    Path objects = BigObjects.write(tmp.resolve("big"), endpoints);
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>(List.of(java, "-cp", System.getProperty("java.class.path"),
        Main.class.getName(), "apply", "--objects", objects.toString(), "--node", "node-a", "--netns", ns.name(),
        "--cluster-cidr", "10.128.0.0/14"));
    Process apply = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(tmp.resolve("apply.log").toFile())
        .start();
    int seen;
    try (RtNetlink nl = RtNetlink.open(Optional.of(ns.name()))) {
      await().atMost(Duration.ofSeconds(60)).pollInterval(Duration.ofMillis(2))
          .until(() -> nl.listRules(IpFamily.V4).stream().filter(r -> r.protocol() == 201).count() > 500);
      apply.destroyForcibly();
      assertThat(apply.waitFor(10, TimeUnit.SECONDS)).isTrue();
      seen = (int) nl.listRules(IpFamily.V4).stream().filter(r -> r.protocol() == 201).count();
    }
    System.out.println("apply killed with " + seen + " of " + (endpoints + 3) + " owned rules in place");
    assertThat(seen).as("the kill must land in the middle of the change").isLessThan(endpoints + 3);

    PlanConfig config = PlanConfig.defaults().withCidrs(List.of(IpPrefix.parse("10.128.0.0/14")), List.of(), List.of());
    try (Dataplane dp = Dataplane.open(LinuxKernel.open(Optional.of(ns.name())), config.priority(), config.ruleProtocol())) {
      DesiredState plan = KernelPlan.of(dp, ObjectFiles.load(List.of(objects), n -> {}), "node-a", config).desired();
      ApplyReport report = dp.reconcile(plan);
      assertThat(report.succeeded()).isTrue();
      assertThat(Differ.diff(plan, dp.observe()).isEmpty()).isTrue();
      assertThat(dp.observe().rules()).hasSize(plan.rules().size());
      assertThat(dp.observe().nft().snat()).hasSize(endpoints);
    }
  }
}

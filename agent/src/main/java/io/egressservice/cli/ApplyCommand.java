package io.egressservice.cli;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Change;
import io.egressservice.dataplane.ChangeSet;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.dataplane.NodePlan;
import io.egressservice.objects.ClusterObjects;
import io.egressservice.plan.DesiredState;
import io.egressservice.model.PlanConfig;
import io.egressservice.plan.ServiceOutcome;
import io.egressservice.text.Printable;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code apply}: plan for the node, then reconcile the kernel to it (or, with --dry-run, show the difference). */
@Command(name = "apply", mixinStandardHelpOptions = true,
    description = "Plan for a node and reconcile the kernel to it; --dry-run shows the difference and changes nothing.",
    footer = {"%nExamples:",
        "  egress-service-agent apply --objects cluster.yaml --node node-b --dry-run",
        "  egress-service-agent apply --objects cluster.yaml --node node-b --netns node-b"})
public final class ApplyCommand implements Callable<Integer> {
  @Option(names = "--objects", required = true, arity = "1..*", paramLabel = "PATH",
      description = "YAML/JSON files or directories (multi-document, kind: List).")
  List<Path> objects;

  @FromEnvironment
  @Option(names = {"--node", "--node-name"}, required = true,
      description = "The node this kernel belongs to (--node-name as on run).")
  String node;

  @Option(names = "--dry-run", description = "Print what differs between the plan and the kernel, per service; change nothing.")
  boolean dryRun;

  @Mixin NetnsOption netns;

  @Mixin PlanOptions planOptions;

  @Mixin EgressServicePolicyOptions policy;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    PlanConfig config = planOptions.toConfig();
    PrintWriter out = spec.commandLine().getOut();
    ClusterObjects loaded = policy.applyTo(PlanCommand.loadObjects(objects, spec.commandLine().getErr()));
    PlanCommand.warnIfUnknownNode(loaded, node, spec.commandLine().getErr());
    config = KernelAccess.admit(config); // kernel features probed: a fallback taken, or exit 2 naming what is missing
    try (Dataplane dp = KernelAccess.open(netns.value(), config.priority(), config.ruleProtocol())) {
      NodePlan plan = KernelPlan.of(dp, loaded, node, config);
      DesiredState desired = plan.desired();
      if (dryRun) {
        ChangeSet diff = Dataplane.diff(plan);
        Printable.println(out, String.format("dry run for node %s in %s: %d difference(s); nothing was changed",
            node, dp.describe(), diff.changes().size()));
        printPerService(out, desired, diff.changes());
        out.flush();
        return Main.EXIT_OK;
      }
      ApplyReport report = dp.reconcile(plan);
      Printable.println(out, String.format("applied %d change(s) for node %s in %s (kernel time %.1f ms)",
          report.applied().size(), node, dp.describe(), report.kernelNanos() / 1e6));
      printPerService(out, desired, report.applied());
      if (!report.succeeded()) {
        PrintWriter err = spec.commandLine().getErr();
        err.println("error: " + report.failures().size() + " change(s) were refused by the kernel;"
            + " everything else was applied and a new 'apply' retries them:");
        report.failures().forEach(f -> Printable.println(err, "  " + f));
        err.flush();
        out.flush();
        return Main.EXIT_SYSTEM_ERROR;
      }
      out.flush();
      return Main.EXIT_OK;
    } catch (DataplaneException e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }

  /**
   * Groups changes by service, each under the plan's outcome for it, so "what is wrong here" reads top-down. Each
   * line {@linkplain Printable#escape escaped}: names, reasons and networks come from the objects.
   */
  static void printPerService(PrintWriter out, DesiredState desired, List<Change> changes) {
    Map<String, List<Change>> byService = new LinkedHashMap<>();
    for (ServiceOutcome o : desired.services()) {
      byService.put(o.service().toString(), new java.util.ArrayList<>());
    }
    for (Change c : changes) {
      byService.computeIfAbsent(c.service(), k -> new java.util.ArrayList<>()).add(c);
    }
    for (Map.Entry<String, List<Change>> e : byService.entrySet()) {
      ServiceOutcome outcome = desired.services().stream()
          .filter(o -> o.service().toString().equals(e.getKey())).findFirst().orElse(null);
      Printable.println(out, "  " + e.getKey() + (outcome == null ? ""
          : ": " + (outcome.configured() ? "configured: " : "not configured: ") + outcome.reason()));
      if (outcome != null) {
        outcome.skippedEndpoints().forEach(s -> Printable.println(out, "      skipped " + s.address() + ": " + s.reason()));
        outcome.steeredEndpoints().forEach(s -> Printable.println(out, "      steered " + s));
        if (!outcome.steeredIn().isEmpty()) {
          Printable.println(out, "      steered here by their nodes: " + String.join(", ", outcome.steeredIn()));
        }
        if (!outcome.remoteEndpoints().isEmpty()) {
          Printable.println(out, "      not on this node and not steered here (they leave their own node as before): "
              + String.join(", ", outcome.remoteEndpoints()));
        }
      }
      if (e.getValue().isEmpty()) {
        out.println("      (kernel matches the plan)");
      }
      e.getValue().forEach(c -> Printable.println(out, "    " + c));
    }
  }
}

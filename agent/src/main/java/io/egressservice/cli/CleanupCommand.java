package io.egressservice.cli;

import io.egressservice.dataplane.ApplyReport;
import io.egressservice.dataplane.Dataplane;
import io.egressservice.dataplane.DataplaneException;
import io.egressservice.text.Printable;
import java.io.PrintWriter;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code cleanup}: removes everything the agent owns (DESIGN.md section 2) and nothing else. */
@Command(name = "cleanup", mixinStandardHelpOptions = true,
    description = "Remove every ip rule (priority P and P-1 with our protocol), every throw route with our protocol,"
        + " the steering device and tables, and the nft tables the agent owns (SNAT, no-host, guard); nothing else.",
    footer = {"%nExamples:",
        "  egress-service-agent cleanup                        (on a node whose agent was gone before its DaemonSet:",
        "                                                       docs/install.md, Uninstall, runs it from the image)",
        "  egress-service-agent cleanup --netns node-b"})
public final class CleanupCommand implements Callable<Integer> {
  @Mixin NetnsOption netns;

  @Mixin OwnershipOptions ownership;

  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    ownership.validate();
    PrintWriter out = spec.commandLine().getOut();
    try (Dataplane dp = KernelAccess.open(netns.value(), ownership.priority, ownership.ruleProtocol)) {
      ApplyReport report = dp.cleanup();
      out.printf("removed %d owned object(s) in %s in %d ms%n", report.applied().size(), dp.describe(),
          report.kernelNanos() / 1_000_000);
      report.applied().forEach(c -> Printable.println(out, "  " + c)); // names from the kernel's comments
      out.flush();
      if (!report.succeeded()) {
        report.failures().forEach(f -> Printable.println(spec.commandLine().getErr(), "error: " + f));
        spec.commandLine().getErr().flush();
        return Main.EXIT_SYSTEM_ERROR;
      }
      return Main.EXIT_OK;
    } catch (DataplaneException e) {
      throw new Main.SystemError(e.getMessage(), e);
    }
  }
}

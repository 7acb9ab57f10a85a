package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import picocli.CommandLine;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;

/** {@code run} and {@code allocator} take the allocator process's options from one declaration, alike. */
class AllocatorProcessOptionsTest {
  private static List<String> sharedOptionNames() {
    return CommandSpec.forAnnotatedObject(new AllocatorProcessOptions()).options().stream()
        .map(OptionSpec::longestName).toList();
  }

  @Test
  void runAndAllocatorOfferTheSharedOptionsWithTheSameDefaultsAndHelp() {
    assertThat(sharedOptionNames()).contains("--kubeconfig", "--metrics-port", "--lease-namespace", "--pod-name",
        "--host-probes", "--host-probe-port", "--lease-duration", "--lease-renew-deadline", "--lease-retry-period");
    CommandLine main = Main.commandLine();
    CommandSpec run = main.getSubcommands().get("run").getCommandSpec();
    CommandSpec allocator = main.getSubcommands().get("allocator").getCommandSpec();
    for (String name : sharedOptionNames()) {
      OptionSpec inRun = run.findOption(name);
      OptionSpec inAllocator = allocator.findOption(name);
      assertThat(inRun).as("run %s", name).isNotNull();
      assertThat(inAllocator).as("allocator %s", name).isNotNull();
      assertThat(inRun.defaultValue()).as(name).isEqualTo(inAllocator.defaultValue());
      assertThat(inRun.description()).as(name).isEqualTo(inAllocator.description());
    }
  }

  @Test
  void unsetSharedOptionsTakeTheSameValuesInBothCommands() {
    CommandLine main = Main.commandLine();
    main.parseArgs("run", "--node-name", "node-a");
    AllocatorProcessOptions inRun = ((RunCommand) main.getSubcommands().get("run").getCommand()).process;
    main = Main.commandLine();
    main.parseArgs("allocator");
    AllocatorProcessOptions inAllocator =
        ((AllocatorCommand) main.getSubcommands().get("allocator").getCommand()).process;

    String podNamespace = System.getenv("EGRESS_AGENT_POD_NAMESPACE");
    String metricsPort = System.getenv("EGRESS_AGENT_METRICS_PORT");
    assertThat(inRun.leaseNamespace).isEqualTo(inAllocator.leaseNamespace)
        .isEqualTo(podNamespace == null ? "egress-service-agent" : podNamespace);
    assertThat(inRun.metricsPort).isEqualTo(inAllocator.metricsPort)
        .isEqualTo(metricsPort == null ? 9464 : Integer.parseInt(metricsPort));
    assertThat(inRun.podName).isEqualTo(inAllocator.podName).isEqualTo(System.getenv("EGRESS_AGENT_POD_NAME"));
    assertThat(inRun.kubeconfig).isEqualTo(inAllocator.kubeconfig);
    assertThat(inRun.lease.leaseDuration).isEqualTo(inAllocator.lease.leaseDuration);
    assertThat(inRun.hostProbes.toProbes()).isEqualTo(inAllocator.hostProbes.toProbes());
  }

  @Test
  void theTrustedEndpointManagersFlagIsOneDeclarationTheAgentsAndTheAllocatorShare() {
    CommandLine main = Main.commandLine();
    for (String command : List.of("run", "allocator", "plan", "apply", "status", "explain")) {
      OptionSpec flag = main.getSubcommands().get(command).getCommandSpec().findOption("--trusted-endpoint-managers");
      assertThat(flag).as(command).isNotNull();
      assertThat(((java.lang.reflect.Field) flag.userObject()).getDeclaringClass()).as(command)
          .isEqualTo(TrustedEndpointManagersOption.class);
    }
  }
}

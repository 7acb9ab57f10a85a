package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** {@code plan --node} with a node no object knows, and {@code run --node-name} vs {@code --node}. */
class NodeFlagTest {
  private static final String[] EXAMPLES = {"plan", "--objects", "examples", "--service-cidr", "172.30.0.0/16"};

  private static String[] plan(String... more) {
    return java.util.stream.Stream.concat(java.util.Arrays.stream(EXAMPLES), java.util.Arrays.stream(more))
        .toArray(String[]::new);
  }

  @Test
  void planForANodeThatIsInNoObjectWarnsOnStderrNamingTheKnownNodesAndStillPlans() {
    InProcess.Result r = InProcess.run(plan("--node", "node-x"));

    assertThat(r.exit()).isZero();
    assertThat(r.out()).startsWith("# egress-service-agent plan for node node-x");
    assertThat(r.err().strip()).isEqualTo("warning: node 'node-x' appears in no object (no Node, no endpoint on it,"
        + " no EgressService hosted by it); planning it as a node without addresses, pod CIDRs or endpoints."
        + " Nodes the objects name: node-a, node-b");
  }

  @Test
  void planForAKnownNodeGivesNoWarning() {
    InProcess.Result r = InProcess.run(plan("--node", "node-b"));
    assertThat(r.exit()).isZero();
    assertThat(r.err()).isEmpty();
  }

  @Test
  void nodeNameIsAcceptedOnPlanApplyAndStatusAsOnRun() {
    InProcess.Result byNode = InProcess.run(plan("--node", "node-a", "-o", "json"));
    InProcess.Result byNodeName = InProcess.run(plan("--node-name", "node-a", "-o", "json"));
    assertThat(byNodeName.exit()).as(byNodeName.err()).isZero();
    assertThat(byNodeName.out()).isEqualTo(byNode.out());

    for (String command : new String[] {"apply", "status"}) {
      var option = Main.commandLine().getSubcommands().get(command).getCommandSpec().findOption("--node-name");
      assertThat(option).as(command).isNotNull();
      assertThat(option.names()).as(command).contains("--node", "--node-name");
    }
  }
}

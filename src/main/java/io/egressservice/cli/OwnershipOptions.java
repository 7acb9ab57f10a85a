package io.egressservice.cli;

import picocli.CommandLine.Option;

/** What marks kernel objects as ours: the rule priority band and the rule protocol. */
public final class OwnershipOptions {
  @Option(names = "--priority", defaultValue = "${env:EGRESS_AGENT_PRIORITY:-5000}",
      description = "Priority P of the service rules; in-cluster rules sit at P-1 (default ${DEFAULT-VALUE}).")
  int priority;

  @Option(names = "--rule-protocol", defaultValue = "${env:EGRESS_AGENT_RULE_PROTOCOL:-201}",
      description = "The ip rule 'protocol' that marks our rules; rules with another protocol are left alone (default ${DEFAULT-VALUE}).")
  int ruleProtocol;

  void validate() {
    if (priority < 2 || priority > 32765) {
      throw new Main.UserError("--priority must be between 2 and 32765 (P-1 holds the in-cluster rules), not " + priority);
    }
    if (ruleProtocol < 1 || ruleProtocol > 255) {
      throw new Main.UserError("--rule-protocol must be between 1 and 255, not " + ruleProtocol);
    }
  }
}

package io.egressservice.cli;

import picocli.CommandLine.Option;

/** What marks kernel objects as ours: the rule priority band and the rule protocol. */
public final class OwnershipOptions {
  @FromEnvironment
  @Option(names = "--priority", defaultValue = "5000",
      description = "Priority P of the service rules; P-1 is ours too (earlier versions' in-cluster rules, removed on"
          + " upgrade) (default ${DEFAULT-VALUE}).")
  int priority;

  @FromEnvironment
  @Option(names = "--rule-protocol", defaultValue = "201",
      description = "The 'protocol' that marks our ip rules and throw routes; others are left alone (default ${DEFAULT-VALUE}).")
  int ruleProtocol;

  void validate() {
    if (priority < 2 || priority > 32765) {
      throw new Main.UserError("--priority must be between 2 and 32765 (P-1 is ours too), not " + priority);
    }
    if (ruleProtocol < 1 || ruleProtocol > 255) {
      throw new Main.UserError("--rule-protocol must be between 1 and 255, not " + ruleProtocol);
    }
  }
}

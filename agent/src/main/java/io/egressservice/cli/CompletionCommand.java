package io.egressservice.cli;

import java.util.concurrent.Callable;
import picocli.AutoComplete;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code completion}: picocli's completion script for bash, from the same model that parses the command line, so
 * it never lists an option the agent does not have. zsh runs it through {@code bashcompinit}.
 */
@Command(name = "completion", mixinStandardHelpOptions = true,
    description = {"Print the shell completion script (bash; zsh with bashcompinit) of every command and option."},
    footer = {"%nExamples:",
        "  source <(egress-service-agent completion)                       (bash, this shell)",
        "  egress-service-agent completion > /etc/bash_completion.d/egress-service-agent",
        "  autoload -U +X bashcompinit && bashcompinit && source <(egress-service-agent completion)   (zsh)"})
public final class CompletionCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    String script = AutoComplete.bash(spec.root().name(), spec.root().commandLine());
    spec.commandLine().getOut().print(script);
    spec.commandLine().getOut().flush();
    return Main.EXIT_OK;
  }
}

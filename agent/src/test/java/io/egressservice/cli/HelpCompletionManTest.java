package io.egressservice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** The CLI's conventions: every command's help shows an example; bash completion and the man page follow the model. */
class HelpCompletionManTest {
  @TempDir Path tmp;

  /** Every command a user can call, by name (not the help command itself). */
  static List<String> commands() {
    return Main.commandLine().getSubcommands().keySet().stream().filter(n -> !n.equals("help")).toList();
  }

  @Test
  void everyCommandsHelpShowsAnExampleOfThatCommand() {
    InProcess.Result root = InProcess.run("--help");
    assertThat(root.out()).contains("Examples:", "  egress-service-agent explain ");
    assertThat(commands()).contains("explain", "status", "completion", "man");
    for (String command : commands()) {
      InProcess.Result r = InProcess.run(command, "--help");
      assertThat(r.exit()).isZero();
      assertThat(r.out()).as("%s --help:%n%s", command, r.out())
          .contains("Examples:").contains("egress-service-agent " + command);
    }
  }

  @Test
  void bashCompletionCompletesCommandsAndTheirOptions() throws Exception {
    InProcess.Result r = InProcess.run("completion");
    assertThat(r.exit()).isZero();
    Path script = Files.writeString(tmp.resolve("completion.bash"), r.out());
    assertThat(complete(script, "egress-service-agent expl")).containsExactly("explain");
    assertThat(complete(script, "egress-service-agent explain --ne")).containsExactly("--netns");
    assertThat(complete(script, "egress-service-agent status --no-a")).containsExactly("--no-api");
  }

  @Test
  void theManPageHoldsEveryCommandsHelpAndRendersWithoutWarnings() throws Exception {
    InProcess.Result r = InProcess.run("man");
    assertThat(r.exit()).isZero();
    assertThat(r.out()).startsWith(".TH EGRESS-SERVICE-AGENT 8 ").contains("\n.SH NAME\n", "\n.SH SYNOPSIS\n");
    for (String command : commands()) {
      assertThat(r.out()).contains("\n.SH COMMAND " + command.toUpperCase(java.util.Locale.ROOT) + "\n");
      String help = Main.commandLine().getSubcommands().get(command).getUsageMessage(CommandLine.Help.Ansi.OFF);
      assertThat(help.lines().filter(l -> !l.isBlank()).limit(3))
          .allSatisfy(l -> assertThat(r.out()).contains(ManCommand.escape(l)));
    }
    Path page = Files.writeString(tmp.resolve("egress-service-agent.8"), r.out());
    Process p = new ProcessBuilder("sh", "-c", "command -v groff >/dev/null || exit 77; groff -man -Tutf8 -ww -z " + page)
        .redirectErrorStream(true).start();
    String warnings = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    org.junit.jupiter.api.Assumptions.assumeTrue(p.exitValue() != 77, "groff is not installed");
    assertThat(warnings).as("groff's warnings").isEmpty();
    assertThat(p.exitValue()).isZero();
  }

  /**
   * ENVIRONMENT names every variable a flag reads (the DaemonSet configures the agent by them) and the logging's;
   * EXIT STATUS every status the process ends with; SEE ALSO only pages that exist (no page for the kubectl plugin).
   */
  @Test
  void theManPageHasEnvironmentAndExitStatusAndNamesOnlyPagesThatExist() throws Exception {
    String page = InProcess.run("man").out();
    String environment = page.substring(page.indexOf("\n.SH ENVIRONMENT\n"), page.indexOf("\n.SH EXIT STATUS\n"));
    assertThat(environment).contains("\n.B EGRESS_AGENT_CLUSTER_CIDR\n--cluster-cidr (apply, explain, plan, run, status)\n",
        "\n.B EGRESS_AGENT_NODE_NAME\n", "\n.B EGRESS_AGENT_LOG_FORMAT\n", "\n.B EGRESS_AGENT_LOG_LEVEL\n",
        "\n.B EGRESS_AGENT_JVM_OPTIONS\n");
    String exitStatus = page.substring(page.indexOf("\n.SH EXIT STATUS\n"), page.indexOf("\n.SH SEE ALSO\n"));
    for (int status : new int[] {Main.EXIT_OK, Main.EXIT_USER_ERROR, Main.EXIT_SYSTEM_ERROR, Main.EXIT_FATAL_ERROR,
        Main.EXIT_ESSENTIAL_THREAD_ENDED}) {
      assertThat(exitStatus).contains("\n.B " + status + "\n");
    }
    String seeAlso = page.substring(page.indexOf("\n.SH SEE ALSO\n"));
    java.util.regex.Matcher ref = java.util.regex.Pattern.compile("([a-z][a-z0-9_.-]*)\\((\\d)\\)").matcher(seeAlso);
    List<String> refs = new java.util.ArrayList<>();
    while (ref.find()) {
      refs.add(ref.group(1) + "(" + ref.group(2) + ")");
      // where iproute2's own pages are installed (not on every CI image), each named page must be there too
      Process man = new ProcessBuilder("sh", "-c", "man -w 8 ip >/dev/null 2>&1 || exit 0; man -w " + ref.group(2) + " "
          + ref.group(1)).redirectErrorStream(true).start();
      String where = new String(man.getInputStream().readAllBytes());
      assertThat(man.waitFor(30, TimeUnit.SECONDS)).isTrue();
      assertThat(man.exitValue()).as("man -w %s: %s", ref.group(0), where).isZero();
    }
    assertThat(refs).as("SEE ALSO's pages").containsExactly("ip-rule(8)", "ip-route(8)", "nft(8)");
  }

  /** What bash completes for {@code line} (cursor at its end) with {@code script} loaded. */
  private static List<String> complete(Path script, String line) throws IOException, InterruptedException {
    String[] words = line.split(" ");
    // compopt works only while bash itself runs a completion: here a no-op
    String bash = "source " + script + "\ncompopt() { :; }\n"
        + "COMP_LINE='" + line + "'; COMP_POINT=${#COMP_LINE}; COMP_WORDS=(" + line + "); COMP_CWORD="
        + (words.length - 1) + "\n"
        + "_complete_egress-service-agent\n"
        + "printf '%s\\n' \"${COMPREPLY[@]}\"\n";
    Process p = new ProcessBuilder("bash", "-c", bash).redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes());
    assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
    return out.lines().map(String::trim).filter(l -> !l.isEmpty()).toList();
  }
}

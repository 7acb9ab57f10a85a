package io.egressservice.cli;

import io.egressservice.logging.LogConfigurator;
import java.io.PrintWriter;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Model.OptionSpec;
import picocli.CommandLine.Spec;

/**
 * {@code man}: a man page (troff, section 8) made from the picocli model: NAME, SYNOPSIS and one section per
 * command holding that command's own {@code --help} (examples included), so the page and the help never differ;
 * ENVIRONMENT lists every variable a flag reads (from the model too) and those the logging and the image's launcher
 * read; EXIT STATUS the process's statuses. The help is set as written (no fill), which keeps its columns; no
 * AsciiDoc step, no extra build tool. SEE ALSO names only pages that exist (the kubectl plugin has none: its help
 * is {@code kubectl egress-service --help}).
 */
@Command(name = "man", mixinStandardHelpOptions = true,
    description = {"Print the man page (troff, section 8) of every command."},
    footer = {"%nExamples:",
        "  egress-service-agent man | man -l -",
        "  egress-service-agent man > /usr/local/share/man/man8/egress-service-agent.8"})
public final class ManCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    PrintWriter out = spec.commandLine().getOut();
    CommandLine root = spec.root().commandLine();
    String name = spec.root().name();
    String version = String.join(" ", spec.root().version());
    out.println(".TH " + name.toUpperCase(Locale.ROOT) + " 8 \"" + pageDate(System.getenv("SOURCE_DATE_EPOCH"))
        + "\" \"" + escape(version.isBlank() ? name : version) + "\" \"System Administration\"");
    out.println(".SH NAME");
    out.println(escape(name) + " \\- " + escape(String.join(" ", spec.root().usageMessage().description())));
    out.println(".SH SYNOPSIS");
    out.println(".B " + escape(name));
    out.println("COMMAND [OPTIONS]");
    section(out, "DESCRIPTION", root);
    for (CommandLine sub : root.getSubcommands().values()) {
      if (sub.getCommandSpec().usageMessage().hidden() || sub.getCommandName().equals("help")) {
        continue;
      }
      section(out, "COMMAND " + sub.getCommandName().toUpperCase(Locale.ROOT), sub);
    }
    environment(out, root);
    exitStatus(out);
    out.println(".SH SEE ALSO");
    out.println("ip-rule(8), ip-route(8), nft(8)");
    out.println(".PP");
    out.println("The kubectl plugin (kubectl-egress_service on PATH, also in the image at /usr/local/bin):");
    out.println(".B kubectl egress-service --help");
    out.flush();
    return Main.EXIT_OK;
  }

  /** Variables read without a flag: the logging's and the image launcher's. */
  private static final Map<String, String> OTHER_VARIABLES = new TreeMap<>(Map.of(
      LogConfigurator.FORMAT_VARIABLE, "Log format: text (default) or json (one JSON object a line on stderr).",
      LogConfigurator.LEVEL_VARIABLE, "Log level: trace, debug, info (default), warn, error or off.",
      "EGRESS_AGENT_JVM_OPTIONS", "The image's launcher puts these words (split on white space, unquoted) on java's"
          + " command line, before the jar; the chart and deploy/ set the JVM's options here, not in JAVA_TOOL_OPTIONS,"
          + " for which the JVM prints a line of its own on stderr."));

  /** ENVIRONMENT: each variable a flag's default reads (with the flags and commands), then the others. */
  private static void environment(PrintWriter out, CommandLine root) {
    // variable -> flag -> the commands that take it
    Map<String, Map<String, TreeSet<String>>> flagsByVariable = new TreeMap<>();
    for (CommandLine sub : root.getSubcommands().values()) {
      for (OptionSpec option : sub.getCommandSpec().options()) {
        EnvironmentDefaults.variable(option).ifPresent(variable -> flagsByVariable
            .computeIfAbsent(variable, k -> new TreeMap<>())
            .computeIfAbsent(option.longestName(), k -> new TreeSet<>()).add(sub.getCommandName()));
      }
    }
    out.println(".SH ENVIRONMENT");
    out.println("Every flag's default may come from a variable, as the DaemonSet sets them.");
    flagsByVariable.forEach((variable, flags) -> {
      out.println(".TP");
      out.println(".B " + escape(variable));
      List<String> uses = new ArrayList<>();
      flags.forEach((flag, commands) -> uses.add(flag + " (" + String.join(", ", commands) + ")"));
      out.println(escape(String.join(", ", uses)));
    });
    OTHER_VARIABLES.forEach((variable, what) -> {
      out.println(".TP");
      out.println(".B " + escape(variable));
      out.println(escape(what));
    });
  }

  private static void exitStatus(PrintWriter out) {
    out.println(".SH EXIT STATUS");
    for (String[] status : new String[][] {
        {Integer.toString(Main.EXIT_OK), "Success."},
        {Integer.toString(Main.EXIT_USER_ERROR), "A user error: a bad flag, unreadable or invalid objects (the message"
            + " names the file and the object)."},
        {Integer.toString(Main.EXIT_SYSTEM_ERROR), "A system error: no CAP_NET_ADMIN, no such network namespace, the"
            + " kernel refused."},
        {Integer.toString(Main.EXIT_FATAL_ERROR), "An Error reached the top of a thread, e.g. out of memory (also the"
            + " status of -XX:+ExitOnOutOfMemoryError)."},
        {Integer.toString(Main.EXIT_ESSENTIAL_THREAD_ENDED), "A thread the process cannot go on without ended (the"
            + " reconcile loop, the probes' server)."},
        {"127", "The image's launcher could not start java, or EGRESS_AGENT_JVM_OPTIONS holds a quote."}}) {
      out.println(".TP");
      out.println(".B " + status[0]);
      out.println(escape(status[1]));
    }
  }

  private static void section(PrintWriter out, String title, CommandLine cmd) {
    out.println(".SH " + title);
    out.println(".nf");
    for (String line : cmd.getUsageMessage(CommandLine.Help.Ansi.OFF).split("\n", -1)) {
      out.println(escape(line));
    }
    out.println(".fi");
  }

  /**
   * The page's date: SOURCE_DATE_EPOCH's (reproducible builds: the image build sets it, so one commit gives the same
   * page on any day), else today's.
   */
  static LocalDate pageDate(String sourceDateEpoch) {
    if (sourceDateEpoch != null && sourceDateEpoch.strip().matches("\\d+")) {
      return LocalDate.ofInstant(java.time.Instant.ofEpochSecond(Long.parseLong(sourceDateEpoch.strip())),
          ZoneOffset.UTC);
    }
    return LocalDate.now(ZoneOffset.UTC);
  }

  /** troff: a backslash is an escape, and a line starting with . or ' a request. */
  static String escape(String text) {
    String s = text.replace("\\", "\\e");
    return s.startsWith(".") || s.startsWith("'") ? "\\&" + s : s;
  }
}

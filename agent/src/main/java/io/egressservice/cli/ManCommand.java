package io.egressservice.cli;

import java.io.PrintWriter;
import java.time.LocalDate;
import java.time.ZoneOffset;
import java.util.Locale;
import java.util.concurrent.Callable;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code man}: a man page (troff, section 8) made from the picocli model: NAME, SYNOPSIS and one section per
 * command holding that command's own {@code --help} (examples included), so the page and the help never differ.
 * The help is set as written (no fill), which keeps its columns; no AsciiDoc step, no extra build tool.
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
    out.println(".SH SEE ALSO");
    out.println("kubectl-egress_service(1), ip-rule(8), nft(8)");
    out.flush();
    return Main.EXIT_OK;
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

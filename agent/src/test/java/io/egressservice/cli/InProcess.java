package io.egressservice.cli;

import java.io.PrintWriter;
import java.io.StringWriter;

/** Runs the command line in-process, as a user would run it, for tests outside this package. */
public final class InProcess {
  private InProcess() {}

  /** Exit code and what the command printed. */
  public record Result(int exit, String out, String err) {}

  public static Result run(String... args) {
    StringWriter out = new StringWriter();
    StringWriter err = new StringWriter();
    var cl = Main.commandLine();
    cl.setOut(new PrintWriter(out));
    cl.setErr(new PrintWriter(err));
    int exit = cl.execute(args);
    return new Result(exit, out.toString(), err.toString());
  }
}

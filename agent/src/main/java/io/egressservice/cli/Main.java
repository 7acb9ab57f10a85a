package io.egressservice.cli;

import io.egressservice.buildinfo.BuildInfo;
import io.egressservice.lifecycle.FailFast;
import io.egressservice.logging.ProcessLogging;
import io.egressservice.text.Printable;
import java.lang.ref.Reference;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/** The {@code egress-service-agent} command line (DESIGN.md section 4). */
@Command(
    name = "egress-service-agent",
    mixinStandardHelpOptions = true,
    versionProvider = Main.Version.class,
    description = "Implements k8s.ovn.org/v1 EgressService on a node with ip rules and nftables.",
    footer = {"%nExamples:",
        "  egress-service-agent explain shop/web-5d9          (why does this pod leave with that address?)",
        "  egress-service-agent status",
        "  egress-service-agent help plan",
        "  source <(egress-service-agent completion)"},
    subcommands = {RunCommand.class, AllocatorCommand.class, PlanCommand.class, ApplyCommand.class, StatusCommand.class, ExplainCommand.class, CleanupCommand.class, DemoCommand.class, CompletionCommand.class, ManCommand.class, CommandLine.HelpCommand.class})
public final class Main implements Runnable {
  /** Success. */
  public static final int EXIT_OK = 0;
  /** A user error: a bad flag, unreadable or invalid objects. */
  public static final int EXIT_USER_ERROR = 1;
  /** A system error: no CAP_NET_ADMIN, no such netns, the kernel refused. */
  public static final int EXIT_SYSTEM_ERROR = 2;

  /** An Error reached the top of a thread, e.g. out of memory (as {@code -XX:+ExitOnOutOfMemoryError} exits). */
  public static final int EXIT_FATAL_ERROR = FailFast.EXIT_FATAL_ERROR;
  /** A thread the process cannot go on without ended (the reconcile loop, the probes' server). */
  public static final int EXIT_ESSENTIAL_THREAD_ENDED = FailFast.EXIT_ESSENTIAL_THREAD_ENDED;

  /** The commands that load libnftables (plan, for one, does not need to pay for loading JNA). */
  private static final List<String> KERNEL_COMMANDS = List.of("run", "apply", "status", "explain", "cleanup", "demo");

  @CommandLine.Spec CommandLine.Model.CommandSpec spec;

  public static void main(String[] args) {
    // First of all, before anything makes the common pool: no thread per HTTP response (AsyncPool).
    boolean asyncPool = io.egressservice.lifecycle.AsyncPool.bound();
    // Before anything logs or calls native code: java.util.logging and C's stderr go through SLF4J.
    ProcessLogging logging = ProcessLogging.install();
    if (!asyncPool) {
      org.slf4j.LoggerFactory.getLogger(Main.class).warn("the common ForkJoinPool has one thread"
          + " (java.util.concurrent.ForkJoinPool.common.parallelism): every HTTP response starts a thread of its own");
    }
    // Then at once: an Error in any thread, or an essential thread that ends, ends the process (status 3 or 4)
    // rather than leaving it up and never restarted.
    FailFast failFast = FailFast.install();
    CommandLine cl = commandLine();
    cl.setErr(logging.commandLineErr(cl.getErr()));
    cl.setExecutionStrategy(parsed -> {
      if (KERNEL_COMMANDS.contains(subcommand(parsed))) {
        logging.captureNativeStderr();
      }
      return new CommandLine.RunLast().execute(parsed);
    });
    int exit = cl.execute(args);
    failFast.stopping();
    cl.getErr().flush();
    Reference.reachabilityFence(logging);
    System.exit(exit);
  }

  private static String subcommand(CommandLine.ParseResult parsed) {
    return parsed.hasSubcommand() ? parsed.subcommand().commandSpec().name() : "";
  }

  /** Runs the command line and returns the exit code, without exiting (for tests and the demo). */
  public static int execute(String... args) {
    CommandLine cl = commandLine();
    return cl.execute(args);
  }

  static CommandLine commandLine() {
    return commandLine(System::getenv);
  }

  /** The command line whose flags' defaults read {@code environment} ({@link EnvironmentDefaults}). */
  static CommandLine commandLine(java.util.function.UnaryOperator<String> environment) {
    CommandLine cl = new CommandLine(new Main());
    cl.setDefaultValueProvider(new EnvironmentDefaults(environment));
    cl.setParameterExceptionHandler((ex, args) -> {
      CommandLine cmd = ex.getCommandLine();
      cmd.getErr().println("error: " + ex.getMessage());
      if (!CommandLine.UnmatchedArgumentException.printSuggestions(ex, cmd.getErr())) {
        cmd.getErr().println("Try '" + cmd.getCommandSpec().qualifiedName() + " --help' for more information.");
      }
      return EXIT_USER_ERROR;
    });
    cl.setExecutionExceptionHandler((ex, cmd, parseResult) -> {
      // escaped: a message may quote a name, a network or a file's content (one line each, whatever they hold)
      if (ex instanceof UserError) {
        Printable.println(cmd.getErr(), "error: " + ex.getMessage());
        return EXIT_USER_ERROR;
      }
      if (ex instanceof SystemError) {
        Printable.println(cmd.getErr(), "error: " + ex.getMessage());
        return EXIT_SYSTEM_ERROR;
      }
      Printable.println(cmd.getErr(), "internal error: " + ex);
      ex.printStackTrace(cmd.getErr());
      return EXIT_SYSTEM_ERROR;
    });
    return cl;
  }

  @Override
  public void run() {
    spec.commandLine().usage(spec.commandLine().getOut());
  }

  /** A failure the user caused and can fix: exit 1. */
  public static final class UserError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public UserError(String message) {
      super(message);
    }
  }

  /** A failure of the system (privileges, kernel, namespace): exit 2. */
  public static final class SystemError extends RuntimeException {
    private static final long serialVersionUID = 1L;

    public SystemError(String message, Throwable cause) {
      super(message, cause);
    }
  }

  static final class Version implements CommandLine.IVersionProvider {
    @Override
    public String[] getVersion() {
      return new String[] {"egress-service-agent " + BuildInfo.current().describe()};
    }
  }
}

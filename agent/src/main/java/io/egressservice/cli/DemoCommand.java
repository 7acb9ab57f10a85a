package io.egressservice.cli;

import io.egressservice.logging.MockServerLogs;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/** {@code demo}: the embedded walk-through with real packets. */
@Command(name = "demo", mixinStandardHelpOptions = true,
    description = "Show the agent at work: an in-process API server, throwaway network namespaces, the real agent and "
        + "real UDP packets, before and after an EgressService is created, changed and deleted. Needs root.",
    footer = {"%nExamples:",
        "  sudo egress-service-agent demo"})
public final class DemoCommand implements Callable<Integer> {
  @Spec CommandSpec spec;

  @Override
  public Integer call() {
    if (!hasEmbeddedApiServer()) {
      throw new Main.UserError("the demo is not part of egress-service-agent-node.jar (the image's jar leaves out the "
          + "demo's embedded API server): run it from egress-service-agent.jar");
    }
    String missing = missingPrivileges();
    if (!missing.isEmpty()) {
      throw new Main.SystemError("the demo " + missing, null);
    }
    PrintWriter out = spec.commandLine().getOut();
    quietLogs();
    DemoWalkthrough demo = DemoWalkthrough.load(out);
    Thread onCtrlC = new Thread(demo::close, "demo-cleanup");
    Runtime.getRuntime().addShutdownHook(onCtrlC);
    try {
      return demo.run() ? Main.EXIT_OK : Main.EXIT_SYSTEM_ERROR;
    } catch (RuntimeException e) {
      throw new Main.SystemError("the demo failed: " + e.getMessage(), e);
    } finally {
      demo.close();
      try {
        Runtime.getRuntime().removeShutdownHook(onCtrlC);
      } catch (IllegalStateException e) {
        // already shutting down: the hook runs close(), which is idempotent
      }
    }
  }

  /** The demo tells its own story on stdout; the agent's and the mock server's logs would drown it. */
  private static void quietLogs() {
    MockServerLogs.warningsOnly();
    if (org.slf4j.LoggerFactory.getLogger("io.egressservice") instanceof ch.qos.logback.classic.Logger agentLog
        && System.getenv("EGRESS_AGENT_LOG_LEVEL") == null) {
      agentLog.setLevel(ch.qos.logback.classic.Level.WARN);
    }
  }

  /** Whether this jar carries the mock API server the demo runs in-process (the node jar does not). */
  static boolean hasEmbeddedApiServer() {
    return DemoCommand.class.getClassLoader()
        .getResource("io/fabric8/kubernetes/client/server/mock/KubernetesMockServer.class") != null;
  }

  /** Empty when the process can create namespaces, else what is missing. */
  static String missingPrivileges() {
    try {
      for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
        if (line.startsWith("CapEff:")) {
          long caps = Long.parseUnsignedLong(line.substring(7).trim(), 16);
          boolean netAdmin = (caps & (1L << 12)) != 0;
          boolean sysAdmin = (caps & (1L << 21)) != 0;
          if (!netAdmin || !sysAdmin) {
            return "needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN) to create network namespaces: run it with sudo";
          }
        }
      }
    } catch (IOException | NumberFormatException e) {
      return "cannot read the process capabilities from /proc/self/status: " + e.getMessage();
    }
    if (!Files.isExecutable(Path.of("/usr/sbin/ip")) && !Files.isExecutable(Path.of("/sbin/ip"))) {
      return "needs iproute2 (the 'ip' command): run scripts/setup.sh";
    }
    return "";
  }
}

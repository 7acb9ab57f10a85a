package io.egressservice.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Runs a Java main class of this build in a child process with every capability dropped (root's uid,
 * but no CAP_NET_ADMIN: what a user without privileges gets), as a user would start the jar.
 */
public final class Unprivileged {
  private Unprivileged() {}

  /** Exit code (-1 when it had to be killed at the time limit) and what the process printed. */
  public record Result(int exit, String out, String err) {}

  /** Skips unless {@code setpriv} exists and this process may drop capabilities (root). */
  public static void assumeAvailable() {
    boolean setpriv = Files.isExecutable(Path.of("/usr/bin/setpriv")) || Files.isExecutable(Path.of("/bin/setpriv"));
    String reason = !setpriv ? "needs setpriv (util-linux) to drop capabilities"
        : !Privileges.missingReason().isEmpty() ? "needs root to drop capabilities for a child process: "
            + Privileges.missingReason() : "";
    if (!reason.isEmpty()) {
      System.err.println("SKIPPED unprivileged-process test: " + reason);
    }
    Assumptions.assumeTrue(reason.isEmpty(), reason);
  }

  /** Runs {@code mainClass args} without capabilities, killing it after {@code limit}. */
  public static Result run(Map<String, String> env, Duration limit, Path workDir, String mainClass, String... args)
      throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    List<String> cmd = new ArrayList<>(List.of("setpriv", "--inh-caps=-all", "--bounding-set=-all", java,
        "-cp", System.getProperty("java.class.path"), mainClass));
    cmd.addAll(List.of(args));
    Path out = Files.createTempFile(workDir, "out", ".txt");
    Path err = Files.createTempFile(workDir, "err", ".txt");
    ProcessBuilder pb = new ProcessBuilder(cmd).redirectOutput(out.toFile()).redirectError(err.toFile());
    pb.environment().keySet().removeIf(k -> k.startsWith("EGRESS_AGENT_"));
    pb.environment().putAll(env);
    Process p = pb.start();
    int exit;
    if (p.waitFor(limit.toMillis(), TimeUnit.MILLISECONDS)) {
      exit = p.exitValue();
    } else {
      p.destroyForcibly();
      p.waitFor(10, TimeUnit.SECONDS);
      exit = -1;
    }
    return new Result(exit, Files.readString(out, StandardCharsets.UTF_8), Files.readString(err, StandardCharsets.UTF_8));
  }
}

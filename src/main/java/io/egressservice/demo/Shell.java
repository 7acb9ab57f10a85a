package io.egressservice.demo;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs iproute2 / sysctl commands that build the demo's namespaces; a failure stops the demo with its stderr. */
final class Shell {
  private Shell() {}

  static String run(String... command) {
    try {
      Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
      String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
      if (!p.waitFor(30, TimeUnit.SECONDS)) {
        p.destroyForcibly();
        throw new IllegalStateException(String.join(" ", command) + ": no answer in 30 s");
      }
      if (p.exitValue() != 0) {
        throw new IllegalStateException(String.join(" ", command) + " failed: " + out.trim());
      }
      return out;
    } catch (IOException e) {
      throw new IllegalStateException("cannot run " + command[0] + ": " + e.getMessage(), e);
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      throw new IllegalStateException("interrupted: " + String.join(" ", command), e);
    }
  }

  /** Like {@link #run} inside a namespace. */
  static String in(String netns, String... command) {
    String[] full = new String[command.length + 4];
    full[0] = "ip";
    full[1] = "netns";
    full[2] = "exec";
    full[3] = netns;
    System.arraycopy(command, 0, full, 4, command.length);
    return run(full);
  }

  static void quietly(List<String> command) {
    try {
      new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start()
          .waitFor(10, TimeUnit.SECONDS);
    } catch (IOException e) {
      // best effort during cleanup
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
  }
}

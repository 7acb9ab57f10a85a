package io.egressservice.testing;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Assumptions;

/** Skips privileged tests with a visible reason when the process cannot create network namespaces. */
public final class Privileges {
  private static final int CAP_NET_ADMIN = 12;
  private static final int CAP_SYS_ADMIN = 21;

  private Privileges() {}

  /** Aborts (skips) the calling test unless it has CAP_NET_ADMIN and CAP_SYS_ADMIN and `ip` exists. */
  public static void assumeNetAdmin() {
    String reason = missingReason();
    if (!reason.isEmpty()) {
      System.err.println("SKIPPED privileged test: " + reason);
    }
    Assumptions.assumeTrue(reason.isEmpty(), reason);
  }

  /** Empty when privileged tests can run, else why not. */
  public static String missingReason() {
    long caps = effectiveCapabilities();
    if ((caps & (1L << CAP_NET_ADMIN)) == 0 || (caps & (1L << CAP_SYS_ADMIN)) == 0) {
      return "needs CAP_NET_ADMIN and CAP_SYS_ADMIN (run as root) to create network namespaces";
    }
    if (!Files.isExecutable(Path.of("/usr/sbin/ip")) && !Files.isExecutable(Path.of("/sbin/ip"))) {
      return "needs iproute2 (the 'ip' command) installed";
    }
    return "";
  }

  private static long effectiveCapabilities() {
    try {
      List<String> lines = Files.readAllLines(Path.of("/proc/self/status"));
      for (String line : lines) {
        if (line.startsWith("CapEff:")) {
          return Long.parseUnsignedLong(line.substring("CapEff:".length()).trim(), 16);
        }
      }
    } catch (IOException | NumberFormatException e) {
      return 0;
    }
    return 0;
  }
}
